/**
 * The allocation-heavy loop of bench/alloc_overhead_bench.py (docs/performance.md §2): small objects,
 * int arrays and strings, a few thousand kept alive in a ring, from three allocation sites of
 * different weight. Prints the loop's own time, so JVM start-up and the agents' exit work are not
 * part of the figure.
 */
public class AllocLoop {
    static final class Point {
        final int x, y;
        Point(int x, int y) { this.x = x; this.y = y; }
    }

    static final Object[] KEEP = new Object[4096];

    static Point point(long i) { return new Point((int) i, (int) (i >> 1)); }

    static int[] ints(long i) { return new int[(int) (i & 7) + 1]; }

    static String text(long i) { return Long.toString(i); }

    public static void main(String[] args) {
        long iterations = Long.parseLong(args[0]);
        long sum = 0;
        long start = System.nanoTime();
        for (long i = 0; i < iterations; i++) {
            Point p = point(i);
            int[] a = ints(i);
            String s = (i & 3) == 0 ? text(i) : "";
            KEEP[(int) (i & 4095)] = (i & 1) == 0 ? p : ((i & 2) == 0 ? a : s);
            sum += p.x + a.length + s.length();
        }
        long end = System.nanoTime();
        System.out.println("loop_ms " + (end - start) / 1e6 + " sum " + sum);
    }
}
