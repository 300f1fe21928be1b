import java.util.ArrayList;
import java.util.List;

/**
 * The heap of docs/performance.md §1 for bench/heap_dump_bench.py: about N objects made of small
 * instances with int, long, String and reference fields, short Object[], byte[] and int[]; a full
 * GC; then "ready", and it waits until killed.
 * Usage: HeapBuilder <objects> [tick]
 * With "tick" a daemon thread wakes every millisecond and prints "stall <from> <to>" (System.nanoTime,
 * the same clock as CLOCK_MONOTONIC) on stderr whenever it found more than 20 ms between two wake-ups:
 * the application's own view of a pause, whoever stopped it (a safepoint, an agent's suspension).
 */
public class HeapBuilder {
    static final class Node {
        int id;
        long stamp;
        String name;
        Node next;
        Object[] refs;
        byte[] bytes;
        int[] ints;
    }

    static List<Node[]> keep = new ArrayList<>();

    static void tick() {
        long last = System.nanoTime();
        for (;;) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            if (now - last > 20_000_000L) System.err.println("stall " + last + " " + now);
            last = now;
        }
    }

    public static void main(String[] args) throws Exception {
        long objects = Long.parseLong(args[0]);
        if (args.length > 1 && args[1].equals("tick")) {
            Thread ticker = new Thread(HeapBuilder::tick, "ticker");
            ticker.setDaemon(true);
            ticker.start();
        }
        // Per node: the Node, a String and its byte[], an Object[2], a byte[16], an int[4]: 6 objects.
        long nodes = objects / 6;
        Node[] chunk = new Node[4096];
        int used = 0;
        Node previous = null;
        for (long i = 0; i < nodes; i++) {
            Node node = new Node();
            node.id = (int) i;
            node.stamp = i * 31;
            node.name = "n" + i;
            node.next = previous;
            node.refs = new Object[] {previous, node.name};
            node.bytes = new byte[16];
            node.ints = new int[4];
            previous = (i % 64 == 0) ? null : node;
            chunk[used++] = node;
            if (used == chunk.length) {
                keep.add(chunk);
                chunk = new Node[4096];
                used = 0;
            }
        }
        keep.add(chunk);
        System.gc();
        System.out.println("ready " + nodes * 6);
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
