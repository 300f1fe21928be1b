/**
 * Keeps some megabytes of int arrays live, so that a heap dump is at least that large, prints
 * "ready", works for the given seconds and prints "finished". Usage: LiveHeap megabytes seconds
 */
public class LiveHeap {
    static int[][] arrays;
    static volatile long sink;
    static volatile Object last;

    // A small allocation three frames deep (tick, step, main) every turn: net_commands sees the
    // depth of its traces change with a CONTROL.
    static void tick(long x) { last = new long[1 + (int) (x & 3)]; }
    static void step(long x) { tick(x); }

    public static void main(String[] args) throws Exception {
        int megabytes = Integer.parseInt(args[0]);
        long seconds = Long.parseLong(args[1]);
        arrays = new int[megabytes][];
        for (int i = 0; i < megabytes; i++) {
            arrays[i] = new int[1 << 18];
            for (int j = 0; j < arrays[i].length; j++) arrays[i][j] = j * 31 + i;
        }
        System.out.println("ready");
        System.out.flush();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        long x = 0;
        while (System.nanoTime() < end) {
            for (int[] array : arrays) x += array[(int) (x & 0x3ffff)];
            step(x);
            Thread.sleep(10);
        }
        sink = x;
        System.out.println("finished");
    }
}
