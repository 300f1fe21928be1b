/*
 * Live counts of heap=sites counted by injection (docs/allocation-sites.md "Live counts by object
 * headers"). The class rewriter puts a second call after each counted allocation, once the object
 * is usable (after the constructor for `new`): FasthprofTracker.marked* hands the object here, and
 * this class writes the object's mark ID into bits of its header that HotSpot leaves unused (the
 * agent gives their place, start(); agent/sites/object_marks.h). At a report the agent forces a
 * collection and walks the heap at a safepoint, reading each object's mark ID: live objects and
 * bytes per site, with no JVMTI tag and nothing kept per object.
 *
 * The header word of an unlocked object: [mark ID | identity hash | age, lock bits]. The ID alone
 * would not last: a full collection gives every object that has no identity hash and holds no lock
 * a fresh header. So an object without a hash gets one here too, drawn as HotSpot draws its own
 * (a xorshift generator per thread; the program may ask for it later and gets this one, as random
 * as the VM's), and the collectors keep such headers whole. The word is set by compare-and-set from
 * the value read, so a hash or a lock another thread installed meanwhile is never lost: a locked
 * header (the object escaped its constructor and someone holds it) is left alone, and the object is
 * counted as unmarked (the agent says how many with verbose=y).
 *
 * A mark ID names where the object was made: its site index + 1 when traces are one frame deep,
 * else (with traces by frame walk) the ID of the pair (walked context, site index), numbered here
 * from 1 in the order pairs are met and given to the agent by collect(). IDs that do not fit the
 * header's unused bits are not written (counted as unmarked).
 */
package java.lang;

import jdk.internal.misc.Unsafe;

final class FasthprofMarks {
    private FasthprofMarks() {}

    private static final Unsafe U = Unsafe.getUnsafe();
    private static final long HASH_MASK = 0x7fffffffL;

    // Set once by start(), before any class gets mark calls.
    private static boolean on;
    private static int idShift;
    private static int hashShift;
    private static long idLimit;
    private static long lockMask = 3;
    private static long unlocked = 1;
    private static boolean byPairs;

    // (context << 32 | site index) -> pair ID, open addressing; a slot's ID is written before its
    // key, and a reader that finds a key with no ID yet takes the lock. Grown by a copy under LOCK.
    private static final FasthprofLock LOCK = new FasthprofLock();
    private static volatile long[] pairKeys = new long[1024];
    private static volatile int[] pairIds = new int[1024];
    private static int pairCount;
    // Pair IDs by ID - 1: their keys, for collect().
    private static long[] pairById = new long[256];
    private static int pairsReported;

    /** The header's layout (agent/sites/object_marks.h); byPairs: traces by frame walk. */
    static void start(int idShiftArg, int idBits, int hashShiftArg, long lockMaskArg, long unlockedArg, boolean pairs) {
        idShift = idShiftArg;
        idLimit = idBits >= 31 ? 1L << 31 : 1L << idBits;
        hashShift = hashShiftArg;
        lockMask = lockMaskArg;
        unlocked = unlockedArg;
        byPairs = pairs;
        on = true;
    }

    /** The pair keys numbered since the last call, in ID order from `first()`. The agent's writer thread. */
    static long[] newPairs(int[] first) {
        LOCK.lock();
        try {
            int from = pairsReported;
            long[] out = new long[pairCount - from];
            System.arraycopy(pairById, from, out, 0, out.length);
            first[0] = from + 1;
            pairsReported = pairCount;
            return out;
        } finally {
            LOCK.unlock();
        }
    }

    // ---- from FasthprofTracker's injected calls -------------------------------------------------

    /** The object made at `site` (its ID as the rewriter gave it), with the walked context or 0. */
    static void mark(Object o, int context, int site) {
        if (!on || o == null || !FasthprofAllocs.counting()) {
            return;
        }
        FasthprofAllocs.State s = FasthprofAllocs.state();
        if (s == null || s.off) {
            return;
        }
        int index = site >>> 4;
        write(s, o, byPairs ? pairId(context, index) : index + 1L);
    }

    /** An object made by Unsafe.allocateInstance or Object.clone at the call site `call`. */
    static void markByClass(Object o, int context, int call) {
        int site = o != null && on ? FasthprofAllocs.classSite(o.getClass(), call) : -1;
        if (site >= 0) {
            mark(o, context, site);
        }
    }

    /** A multianewarray of `dims` >= 2 dimensions: every level's arrays, each under its own site. */
    static void markMulti(Object o, int context, int dims, int site) {
        if (!on || o == null || !FasthprofAllocs.counting()) {
            return;
        }
        FasthprofAllocs.State s = FasthprofAllocs.state();
        if (s == null || s.off) {
            return;
        }
        markLevel(s, o, context, (site >>> 4) - (dims - 1), 0, dims);
    }

    private static void markLevel(FasthprofAllocs.State s, Object a, int context, int first, int level, int dims) {
        int index = first + level;
        write(s, a, byPairs ? pairId(context, index) : index + 1L);
        if (level + 1 < dims && a instanceof Object[] elements) {
            for (Object e : elements) {
                if (e != null) {
                    markLevel(s, e, context, first, level + 1, dims);
                }
            }
        }
    }

    private static void write(FasthprofAllocs.State s, Object o, long id) {
        if (id <= 0 || id >= idLimit) {
            s.unmarked++;
            return;
        }
        for (int tries = 0; tries < 4; tries++) {
            long m = U.getLongVolatile(o, 0L);
            if ((m & lockMask) != unlocked || (m >>> idShift) != 0) {
                break;  // locked by someone, or marked already
            }
            long next = m | (id << idShift);
            if (((m >>> hashShift) & HASH_MASK) == 0) {
                next |= hash(s) << hashShift;
            }
            if (U.compareAndSetLong(o, 0L, m, next)) {
                return;
            }
        }
        s.unmarked++;
    }

    // A nonzero 31-bit identity hash: Marsaglia's xorshift, one generator per thread.
    private static long hash(FasthprofAllocs.State s) {
        long x = s.seed;
        if (x == 0) {
            x = s.tid * 0x9E3779B97F4A7C15L ^ System.nanoTime();
            x = x == 0 ? 1 : x;
        }
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        s.seed = x;
        long h = (x >>> 17) & HASH_MASK;
        return h == 0 ? 0x5bad : h;
    }

    private static long pairId(int context, int index) {
        long key = ((long) context << 32) | (index & 0xffffffffL);
        long[] keys = pairKeys;
        int[] ids = pairIds;
        int mask = keys.length - 1;
        if (ids.length == keys.length) {
            for (int i = slot(key, mask), n = 0; n <= mask; i = (i + 1) & mask, n++) {
                long k = keys[i];
                if (k == key + 1) {
                    int id = ids[i];
                    if (id != 0) {
                        return id;
                    }
                    break;
                }
                if (k == 0) {
                    break;
                }
            }
        }
        return newPair(key);
    }

    private static int slot(long key, int mask) {
        int h = (int) (key ^ (key >>> 32)) * 0x9E3779B1;
        return (h ^ (h >>> 16)) & mask;
    }

    // Under LOCK: the pair's ID, numbered now if it has none. Keys are stored + 1 (0 is free).
    private static long newPair(long key) {
        LOCK.lock();
        try {
            long[] keys = pairKeys;
            int[] ids = pairIds;
            int mask = keys.length - 1;
            int i = slot(key, mask);
            while (keys[i] != 0) {
                if (keys[i] == key + 1) {
                    return ids[i];
                }
                i = (i + 1) & mask;
            }
            if (pairCount + 1 >= idLimit) {
                return -1;
            }
            if ((pairCount + 1) * 2 > keys.length) {
                grow();
                keys = pairKeys;
                ids = pairIds;
                mask = keys.length - 1;
                i = slot(key, mask);
                while (keys[i] != 0) {
                    i = (i + 1) & mask;
                }
            }
            int id = ++pairCount;
            if (id > pairById.length) {
                long[] b = new long[pairById.length * 2];
                System.arraycopy(pairById, 0, b, 0, pairById.length);
                pairById = b;
            }
            pairById[id - 1] = key;
            ids[i] = id;
            U.storeFence();  // the ID before the key
            keys[i] = key + 1;
            return id;
        } finally {
            LOCK.unlock();
        }
    }

    // Under LOCK: both arrays twice as large, published ids first (a reader pairs arrays of one
    // length only).
    private static void grow() {
        long[] keys = pairKeys;
        int[] ids = pairIds;
        long[] nk = new long[keys.length * 2];
        int[] ni = new int[keys.length * 2];
        int mask = nk.length - 1;
        for (int j = 0; j < keys.length; j++) {
            if (keys[j] != 0) {
                int i = slot(keys[j] - 1, mask);
                while (nk[i] != 0) {
                    i = (i + 1) & mask;
                }
                nk[i] = keys[j];
                ni[i] = ids[j];
            }
        }
        pairIds = ni;
        pairKeys = nk;
    }
}
