// Many live threads when the VM ends: a heap dump at exit holds a reference to each of them while
// it describes every class. Java 7 source (see Greeter.java).
import java.util.concurrent.CountDownLatch;

public class Crowd {
    public static void main(String[] args) throws Exception {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        final CountDownLatch started = new CountDownLatch(count);
        final Object never = new Object();
        for (int i = 0; i < count; i++) {
            Thread thread = new Thread(new Runnable() {
                public void run() {
                    synchronized (never) {
                        started.countDown();
                        try {
                            never.wait();
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
            }, "crowd-" + i);
            thread.setDaemon(true);
            thread.start();
        }
        started.await();
        System.out.println("Crowd of " + count + " threads waiting");
    }
}
