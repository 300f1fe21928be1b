import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The bundled demo: a small "service" that keeps an order book in memory, serves requests from a
 * pool of worker threads, and burns some CPU pricing orders. Enough of everything for each kind of
 * HPROF output: live objects for heap dumps, distinct allocation sites, busy and idle threads.
 */
public class Demo {
    static final class Order {
        final long id;
        final String customer;
        final int[] quantities;
        Order next;

        Order(long id, String customer, int lines) {
            this.id = id;
            this.customer = customer;
            this.quantities = new int[lines];
        }
    }

    static final Map<String, List<Order>> BOOK = new HashMap<>();

    static Order place(long id) {
        String customer = "customer-" + (id % 97);
        Order order = new Order(id, customer, 1 + (int) (id % 7));
        BOOK.computeIfAbsent(customer, k -> new ArrayList<>()).add(order);
        return order;
    }

    static double price(Order order) {
        double total = 0;
        for (int i = 0; i < 2000; i++) {
            total += Math.sqrt(order.id * 31 + i) * (order.quantities.length + 1);
        }
        return total;
    }

    public static void main(String[] args) throws Exception {
        int requests = args.length > 0 ? Integer.parseInt(args[0]) : 20000;
        ExecutorService pool = Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r);
            t.setName("worker-" + t.getId());
            return t;
        });
        double[] totals = new double[4];
        for (int w = 0; w < 4; w++) {
            final int worker = w;
            pool.submit(() -> {
                for (int i = worker; i < requests; i += 4) {
                    Order order;
                    synchronized (BOOK) {
                        order = place(i);
                    }
                    totals[worker] += price(order);
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(5, TimeUnit.MINUTES);
        double sum = 0;
        for (double t : totals) sum += t;
        System.out.printf("demo: %d orders for %d customers, value %.0f%n", requests, BOOK.size(), sum);
    }
}
