import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * cpu=times with virtual threads (tests/integration/cpu_times.py virtual_threads): args[0] virtual
 * threads in batches of args[1], each calling work() once, which calls leaf() and sleeps 5 ms
 * (unmounted). The counts are exact; work()'s time includes the sleep. Needs JDK 21+.
 */
public class VirtualCalls {
    static volatile long sink;

    static void leaf() {
        sink++;
    }

    static void work() throws InterruptedException {
        leaf();
        Thread.sleep(5);
    }

    public static void main(String[] args) throws Exception {
        int total = Integer.parseInt(args[0]);
        int batch = Integer.parseInt(args[1]);
        for (int done = 0; done < total; done += batch) {
            try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < batch; i++) {
                    executor.submit(() -> {
                        work();
                        return null;
                    });
                }
            }
        }
        System.out.println("VirtualCalls done " + total);
    }
}
