import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.function.Supplier;

/**
 * Known live answers for heap=sites live counts (tests/integration/alloc_live.py): at each marked
 * line it makes `made` objects and keeps `kept` of them reachable until the exit report, through
 * collections young and full in between. It prints "expect <site> <class> <kept>" per site, then
 * checks what the agent's header marks must not change: the identity hashes of kept objects
 * (taken in constructors, before any mark, and after) stay as they were across collections, and
 * hashes of fresh objects stay spread (few collide). At the exit two kept objects are locked by
 * daemon threads (one held, one waited on), as the report walks the heap. Usage: LiveSites [gc]
 */
public class LiveSites {
    static final List<Object> KEEP = new ArrayList<>();
    static final List<Hashed> HASHED = new ArrayList<>();
    static volatile Object sink;

    static final class Plain {
        final int v;
        Plain(int v) { this.v = v; }
    }

    static final class Hashed {
        final int hash;
        Hashed() { hash = System.identityHashCode(this); }  // hashed before its mark
    }

    static final class Locked {
        Locked() { synchronized (this) { sink = this; } }  // locked and published in its constructor
    }

    static final class Sheep implements Cloneable {
        int wool = 3;
        Sheep copy() throws CloneNotSupportedException { return (Sheep) super.clone(); }  // SITE:sheepclone
    }

    static void sleepForever() {
        try {
            Thread.sleep(Long.MAX_VALUE);
        } catch (InterruptedException e) {
            return;
        }
    }

    static int pick(int i) { return i % 3 == 0 ? 1 : 2; }

    static void expect(String site, String cls, int kept) {
        System.out.println("expect " + site + " " + cls + " " + kept);
    }

    public static void main(String[] args) throws Exception {
        boolean gc = args.length > 0 && args[0].equals("gc");
        int made = 4000;
        for (int i = 0; i < made; i++) {
            Plain p = new Plain(i % 2 == 0 ? i : -i);  // SITE:plain
            int[] ints = new int[i % 7];  // SITE:ints
            long[] longs = new long[3];  // SITE:longs
            byte[] bytes = new byte[i % 33];  // SITE:bytes
            char[] chars = new char[5];  // SITE:chars
            String[] strings = new String[pick(i)];  // SITE:strings
            int[][] grid = new int[2][3];  // SITE:grid
            Object[][][] cube = new Object[2][2][];  // SITE:cube
            Hashed h = new Hashed();  // SITE:hashed
            Locked l = new Locked();  // SITE:locked
            Sheep s = new Sheep().copy();  // SITE:sheep
            int[] copy = ints.clone();  // SITE:intsclone
            Supplier<Plain> lambda = () -> new Plain(7);  // SITE:lambda
            Plain fromLambda = lambda.get();
            if (i % 4 == 0) {
                KEEP.add(p);
                KEEP.add(ints);
                KEEP.add(longs);
                KEEP.add(bytes);
                KEEP.add(chars);
                KEEP.add(strings);
                KEEP.add(grid);
                KEEP.add(cube);
                KEEP.add(l);
                KEEP.add(s);
                KEEP.add(copy);
                KEEP.add(fromLambda);
                HASHED.add(h);
            }
            sink = new Plain(i);  // SITE:dropped
            if (gc && i % 1000 == 999) {
                System.gc();
            }
        }
        int kept = made / 4;
        expect("plain", "LiveSites$Plain", kept);
        expect("ints", "int[]", kept);
        expect("longs", "long[]", kept);
        expect("bytes", "byte[]", kept);
        expect("chars", "char[]", kept);
        expect("strings", "java.lang.String[]", kept);
        expect("grid", "int[][]", kept);
        expect("grid", "int[]", kept * 2);
        expect("cube", "java.lang.Object[][][]", kept);
        expect("cube", "java.lang.Object[][]", kept * 2);
        expect("hashed", "LiveSites$Hashed", kept);
        expect("locked", "LiveSites$Locked", kept);
        expect("sheepclone", "LiveSites$Sheep", kept);
        expect("intsclone", "int[]", kept);
        expect("lambda", "LiveSites$Plain", kept);
        expect("dropped", "LiveSites$Plain", 1);
        if (gc) {
            System.gc();
        }
        int changed = 0;
        for (Hashed h : HASHED) {
            if (System.identityHashCode(h) != h.hash) {
                changed++;
            }
        }
        HashSet<Integer> spread = new HashSet<>();
        for (int i = 0; i < 20000; i++) {
            spread.add(System.identityHashCode(new Plain(i)));  // SITE:spread
        }
        System.out.println("hashes changed " + changed + " of " + HASHED.size());
        System.out.println("distinct hashes " + spread.size() + " of 20000");
        // Two kept objects locked while the exit report walks the heap: one held, one waited on.
        Object held = KEEP.get(0);
        Object waited = KEEP.get(12);
        Thread holder = new Thread(() -> {
            synchronized (held) {
                sleepForever();
            }
        });
        Thread waiter = new Thread(() -> {
            synchronized (waited) {
                try {
                    waited.wait();
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        for (Thread t : new Thread[] {holder, waiter}) {
            t.setDaemon(true);
            t.start();
        }
        while (holder.getState() != Thread.State.TIMED_WAITING || waiter.getState() != Thread.State.WAITING) {
            Thread.sleep(5);
        }
        System.out.println("LiveSites done");
    }
}
