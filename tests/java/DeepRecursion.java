/**
 * A thread that recurses N frames deep (args[0], default 60000) and spins there for args[1]
 * milliseconds (default 1000): with cpu=samples,depth=65535 its samples are N frames deep.
 */
public class DeepRecursion {
    static long sink;

    static long recurse(int depth, long until) {
        if (depth == 0) {
            long spins = 0;
            while (System.nanoTime() < until) spins++;
            return spins;
        }
        return recurse(depth - 1, until) + 1;
    }

    public static void main(String[] args) throws InterruptedException {
        int depth = args.length > 0 ? Integer.parseInt(args[0]) : 60_000;
        long millis = args.length > 1 ? Long.parseLong(args[1]) : 1000;
        // A stack large enough for the frames, interpreted or compiled.
        Thread deep = new Thread(null, () -> sink = recurse(depth, System.nanoTime() + millis * 1_000_000),
                "deep", 1L << 30);
        deep.start();
        deep.join();
    }
}
