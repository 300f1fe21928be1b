// Threads that take turns on one lock (wait/notifyAll) and contend for another, for monitor=y.
// Java 7 source (see Greeter.java).
public class TurnTaking {
    private static final Object TURN = new Object();
    private static final Object BUSY = new Object();
    private static int next;
    private static long shared;

    public static void main(String[] args) throws Exception {
        final int threads = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        final int turns = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int me = t;
            workers[t] = new Thread(new Runnable() {
                public void run() {
                    for (int turn = 0; turn < turns; turn++) {
                        synchronized (TURN) {
                            while (next != me) {
                                try {
                                    TURN.wait();
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                            next = (me + 1) % threads;
                            TURN.notifyAll();
                        }
                        synchronized (BUSY) {
                            for (int i = 0; i < 20000; i++) shared += i ^ me;
                        }
                    }
                }
            }, "turn-" + t);
            workers[t].start();
        }
        for (Thread worker : workers) worker.join();
        System.out.println("Turns taken: " + threads * turns + ", total " + shared);
    }
}
