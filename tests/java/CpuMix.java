import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

/**
 * Threads with known CPU habits for cpu=samples: "hot" spins all the time in hotMethod, "warm" spins
 * about a quarter of the time in warmMethod, and four threads never use the CPU: one sleeps, one
 * waits on a monitor, one is parked, one is blocked entering a monitor that "holder" keeps while it
 * sleeps. Usage: CpuMix [milliseconds]. Prints the measured run time and CPU times at the end.
 */
public class CpuMix {
    static volatile boolean running = true;
    static volatile long sink;
    static final Object waitLock = new Object();
    static final Object heldLock = new Object();

    static long hotMethod() {
        long x = 1;
        while (running) {
            for (int i = 0; i < 100_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
            sink = x;
        }
        return x;
    }

    static void warmMethod(long nanos) {
        long x = 7;
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1_000; i++) x = x * 6364136223846793005L + 1;
        }
        sink = x;
    }

    static void warmLoop() throws InterruptedException {
        while (running) {
            warmMethod(3_000_000L);
            Thread.sleep(9);
        }
    }

    static void sleeperMethod() {
        try {
            Thread.sleep(600_000);
        } catch (InterruptedException e) {
            // stopping
        }
    }

    static void waiterMethod() {
        synchronized (waitLock) {
            try {
                waitLock.wait();
            } catch (InterruptedException e) {
                // stopping
            }
        }
    }

    static void parkerMethod() {
        while (running) LockSupport.park();
    }

    static void holderMethod(CountDownLatch held) {
        synchronized (heldLock) {
            held.countDown();
            try {
                Thread.sleep(600_000);
            } catch (InterruptedException e) {
                // stopping
            }
        }
    }

    static void blockedMethod() {
        synchronized (heldLock) {
            sink++;
        }
    }

    static Thread start(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 3000;
        CountDownLatch held = new CountDownLatch(1);
        Thread holder = start("holder", () -> holderMethod(held));
        held.await();
        Thread sleeper = start("sleeper", CpuMix::sleeperMethod);
        Thread waiter = start("waiter", CpuMix::waiterMethod);
        Thread parker = start("parker", CpuMix::parkerMethod);
        Thread blocked = start("blocked", CpuMix::blockedMethod);

        long began = System.nanoTime();
        Thread hot = start("hot", CpuMix::hotMethod);
        Thread warm = start("warm", () -> {
            try {
                warmLoop();
            } catch (InterruptedException e) {
                // stopping
            }
        });
        System.out.println("CpuMix running");
        System.out.flush();
        Thread.sleep(millis);
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        long hotCpu = bean.getThreadCpuTime(hot.getId());
        long warmCpu = bean.getThreadCpuTime(warm.getId());
        running = false;
        hot.join();
        warm.join();
        long elapsed = System.nanoTime() - began;
        System.out.printf("CpuMix run_ms=%d hot_cpu_ms=%d warm_cpu_ms=%d%n", elapsed / 1_000_000,
                          hotCpu / 1_000_000, warmCpu / 1_000_000);
        System.out.flush();
        for (Thread t : new Thread[] {sleeper, waiter, parker, holder}) t.interrupt();
        LockSupport.unpark(parker);
        blocked.join(5000);
    }
}
