import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * A heap of known shapes for the heap-dump tests: every field type, inheritance, interfaces with
 * constants, statics, nulls, arrays of every primitive type and of objects, multi-dimensional
 * arrays, strings, and threads that hold objects on their stacks.
 *
 * Usage: HeapShapes [seconds to stay alive after "ready" (default 0)] [allocating threads (default 0)]
 * Prints "ready" once the heap is built; then waits, so that dumps can be requested.
 */
public class HeapShapes {
    interface Marked { int MARK = 77; String LABEL = "marked"; }

    static class Base implements Marked {
        int baseInt = 1000;
        String baseName = "base";
        Object baseNull = null;
    }

    static class Mid extends Base {
        long midLong = -5L;
        Base midRef;
    }

    static final class Leaf extends Mid {
        boolean z = true;
        byte b = (byte) -7;
        char c = 'Q';
        short s = (short) -300;
        int i = 123456789;
        long l = 0x1122334455667788L;
        float f = 1.5f;
        double d = -2.25;
        String str;
        int[] ints;
        Leaf next;
        Object nothing;
    }

    static class Holder {
        static int staticInt = 42;
        static long staticLong = 1L << 40;
        static double staticDouble = 3.5;
        static boolean staticFlag = true;
        static char staticChar = 'x';
        static String staticString = "static string";
        static Object staticNull;
        static Leaf[] staticLeaves;
        // Each larger than one 1 MiB HEAP DUMP SEGMENT: written in a segment of its own.
        static long[] bigLongs;
        static Object[] bigRefs;
    }

    // Statics declared before and between instance fields (JVMTI field indices count both).
    static class Mixed {
        static final int[] S1 = {1};
        static Object s2 = "s2";
        int[] data = {4, 5};
        int offset = 7;
        static long s3 = 3;
        int nWords = 9;
        boolean flag = true;
    }

    static class StackValue { final int n; StackValue(int n) { this.n = n; } }

    static final int LEAVES = 100;

    // The heap: kept reachable from this static.
    static List<Object> keep = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 0;
        int allocators = args.length > 1 ? Integer.parseInt(args[1]) : 0;

        Leaf[] leaves = new Leaf[LEAVES];
        for (int k = 0; k < LEAVES; k++) {
            Leaf leaf = new Leaf();
            leaf.i = k;
            leaf.str = "leaf-" + k;
            leaf.ints = new int[] {k, k + 1, k + 2};
            leaf.midRef = k % 2 == 0 ? new Base() : null;
            if (k > 0) leaf.next = leaves[k - 1];
            leaves[k] = leaf;
        }
        Holder.staticLeaves = leaves;
        Holder.bigLongs = new long[400_000];
        Holder.bigLongs[0] = 11;
        Holder.bigLongs[399_999] = -12;
        Holder.bigRefs = new Object[300_000];
        Holder.bigRefs[1] = leaves[1];
        Holder.bigRefs[299_998] = "near the end";
        keep.add(new Object[] {null, "a", null, leaves[0], null});  // nulls kept in the length
        keep.add(new Object[7]);                                     // all null
        keep.add(new boolean[] {true, false, true});
        keep.add(new byte[] {1, -2, 3});
        keep.add(new char[] {'h', 'e', 'y'});
        keep.add(new short[] {-1, 2});
        keep.add(new int[] {0x01020304, -1});
        keep.add(new long[] {0x0102030405060708L});
        keep.add(new float[] {0.5f, -0.25f});
        keep.add(new double[] {6.0, -1e300});
        keep.add(new int[3][4]);
        keep.add(new short[2][3][2]);
        keep.add(new String[][] {{"x", null}, null, {}});
        keep.add(new byte[200_000]);  // an array larger than a 64 KiB buffer
        keep.add(int.class);
        keep.add(void.class);
        keep.add(new Marked() {});
        keep.add(new Mixed());

        CountDownLatch ready = new CountDownLatch(3);
        CountDownLatch done = new CountDownLatch(1);
        List<Thread> holders = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            final int n = t;
            Thread thread = new Thread(() -> hold(n, ready, done), "holder-" + t);
            thread.setDaemon(true);
            thread.start();
            holders.add(thread);
        }
        ready.await();

        List<Thread> busy = new ArrayList<>();
        for (int t = 0; t < allocators; t++) {
            Thread thread = new Thread(HeapShapes::allocate, "allocator-" + t);
            thread.setDaemon(true);
            thread.start();
            busy.add(thread);
        }
        System.gc();
        System.out.println("ready");
        System.out.flush();
        long end = System.currentTimeMillis() + seconds * 1000;
        while (System.currentTimeMillis() < end) Thread.sleep(50);
        done.countDown();
        for (Thread thread : holders) thread.join();
        System.out.println("bye " + leaves.length + " " + keep.size());
    }

    static void hold(int n, CountDownLatch ready, CountDownLatch done) {
        StackValue onStack = new StackValue(n);  // reachable only from this frame
        String name = "held-by-" + n;
        ready.countDown();
        try {
            done.await();
        } catch (InterruptedException e) {
            return;
        }
        if (onStack.n != n || name.isEmpty()) throw new AssertionError();
    }

    static volatile Object sink;

    static void allocate() {
        List<Object> window = new ArrayList<>();
        for (long k = 0; ; k++) {
            window.add(new long[(int) (k % 64)]);
            window.add("s" + k);
            if (window.size() > 10_000) window.clear();
            sink = window;
        }
    }
}
