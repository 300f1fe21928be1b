// bench/cpu_times_bench.py: tens of millions of calls of two tiny static methods.
public class CallLoop {
    static int x;

    static int inc(int v) {
        return v + 1;
    }

    static int twice(int v) {
        return inc(inc(v));
    }

    public static void main(String[] args) {
        long iterations = Long.parseLong(args[0]);
        long start = System.nanoTime();
        int v = 0;
        for (long i = 0; i < iterations; i++) {
            v = twice(v);
        }
        x = v;
        System.out.println("CallLoop calls=" + iterations * 3 + " loop_ms=" + (System.nanoTime() - start) / 1_000_000);
    }
}
