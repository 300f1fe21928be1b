/*
 * The tracker classes' lock (FasthprofTracker, FasthprofAllocs): a spin lock on one int, taken with
 * Unsafe, so that a waiting thread never parks nor unmounts (a virtual thread waiting on a monitor
 * unmounts on JDK 24+, and the thread that must mount it again may itself be waiting here). Every
 * section under it is short and never blocks: it makes or replaces a thread table, or copies counts.
 * It calls nothing instrumented (Thread.onSpinWait and Thread.yield are Java code that would enter
 * the tracker again), so a waiter spins bare.
 */
package java.lang;

import jdk.internal.misc.Unsafe;

final class FasthprofLock {
    private static final Unsafe U = Unsafe.getUnsafe();
    private static final long HELD = U.objectFieldOffset(FasthprofLock.class, "held");

    private volatile int held;

    void lock() {
        while (!U.compareAndSetInt(this, HELD, 0, 1)) {
            // spin: the holder is running and will not block
        }
    }

    void unlock() {
        U.putIntRelease(this, HELD, 0);
    }
}
