import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Two thousand virtual threads that allocate, sleep (unmounting) and compute, while the agent
 * tracks allocations, samples and dumps. Needs JDK 21+; the test compiles it with that JDK.
 */
public class VirtualThreads {
    public static void main(String[] args) throws Exception {
        List<Object> keep = Collections.synchronizedList(new ArrayList<>());
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 2000; i++) {
                final int n = i;
                executor.submit(() -> {
                    keep.add(new int[n % 50]);
                    Thread.sleep(n % 200);
                    double x = 0;
                    for (int k = 0; k < 100_000; k++) x += Math.sqrt(k);
                    keep.add(x);
                    return null;
                });
            }
            System.out.println("submitted");
            System.out.flush();
        }
        System.out.println("virtual threads done " + keep.size());
    }
}
