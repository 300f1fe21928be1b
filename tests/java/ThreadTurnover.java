/**
 * Starts a fixed number of short-lived threads, a few at a time, each of which allocates a little
 * and ends, so that what the agent keeps per ended thread shows up as growth with the count.
 * Usage: ThreadTurnover <threads> [concurrent]
 */
public class ThreadTurnover {
    static volatile Object sink;

    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        int concurrent = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        Thread[] running = new Thread[concurrent];
        for (int n = 0; n < threads; ++n) {
            int slot = n % concurrent;
            if (running[slot] != null) running[slot].join();
            running[slot] = new Thread(() -> sink = new int[8], "turnover-thread-with-a-rather-long-name-" + n);
            running[slot].start();
        }
        for (Thread thread : running) {
            if (thread != null) thread.join();
        }
        System.out.println("ended " + threads + " threads");
    }
}
