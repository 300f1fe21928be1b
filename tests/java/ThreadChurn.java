/**
 * Starts a short-lived thread with a long name every few milliseconds for the given number of
 * seconds, so that the agent streams THREAD START / THREAD END lines the whole time.
 * Usage: ThreadChurn <seconds> [period-ms]
 */
public class ThreadChurn {
    public static void main(String[] args) throws Exception {
        long seconds = Long.parseLong(args[0]);
        long period = args.length > 1 ? Long.parseLong(args[1]) : 20;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        int n = 0;
        System.out.println("churning");
        System.out.flush();
        while (System.nanoTime() < end) {
            Thread t = new Thread(() -> { }, "churn-thread-with-a-rather-long-name-" + n++);
            t.start();
            t.join();
            Thread.sleep(period);
        }
        System.out.println("churned " + n);
    }
}
