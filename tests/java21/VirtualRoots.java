import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * Virtual threads parked (unmounted) while each holds one object on its stack and nowhere else:
 * a heap dump must hold every such object, as a root of that stack. Needs JDK 21+.
 *
 * Usage: VirtualRoots [virtual threads (default 50)] [seconds to stay parked after "ready" (default 20)]
 */
public class VirtualRoots {
    static final class Held {
        final int n;
        Held(int n) { this.n = n; }
    }

    public static void main(String[] args) throws Exception {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 50;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        CountDownLatch parked = new CountDownLatch(count);
        CountDownLatch release = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            final int n = i;
            threads.add(Thread.ofVirtual().name("held-" + n).start(() -> {
                Held held = new Held(n);
                parked.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                Reference.reachabilityFence(held);
            }));
        }
        parked.await();
        System.out.println("ready");
        System.out.flush();
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) Thread.sleep(50);
        release.countDown();
        for (Thread thread : threads) thread.join();
        System.out.println("done " + count);
    }
}
