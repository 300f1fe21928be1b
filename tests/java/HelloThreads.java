import java.util.ArrayList;
import java.util.List;

/** Starts and joins a few named threads in a named group, so thread lines can be checked. */
public class HelloThreads {
    public static void main(String[] args) throws Exception {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        ThreadGroup group = new ThreadGroup("workers");
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            final int n = i;
            Thread t = new Thread(group, () -> {
                StringBuilder sb = new StringBuilder();
                for (int k = 0; k < 1000; k++) sb.append(n).append(k);
                if (sb.length() == 0) System.out.println("never");
            }, "worker-" + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        System.out.println("Hello, threads!");
        System.out.flush();
        if (args.length > 1) Thread.sleep(Long.parseLong(args[1]));
    }
}
