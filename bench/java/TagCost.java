import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

/**
 * What tagging each object costs when injected code asks for it (issue 28, bench/tag_cost_bench.py):
 * an allocation loop of small objects and arrays, one in `keepEvery` kept alive in a ring of `ring`
 * slots (so the tag map holds live and dying objects, as a program's would), with a native call per
 * object in mode `native` (the floor agent's Java_TagCost_tag, tagging or not). Prints the loop's
 * time per object and what the collector spent (its own beans), start-up left out.
 */
public class TagCost {
    static native void tag(Object o);

    static final class Node {
        final long value;
        Node next;
        Node(long value) { this.value = value; }
    }

    static long gcMillis() {
        long sum = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) sum += bean.getCollectionTime();
        return sum;
    }

    static long gcCount() {
        long sum = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) sum += bean.getCollectionCount();
        return sum;
    }

    public static void main(String[] args) {
        long objects = Long.parseLong(args[0]);
        boolean callNative = args[1].equals("native");
        int ring = Integer.parseInt(args[2]);
        int keepEvery = Integer.parseInt(args[3]);
        Object[] keep = new Object[ring];
        long sum = 0;
        int slot = 0;
        long gcBefore = gcMillis();
        long countBefore = gcCount();
        long start = System.nanoTime();
        for (long i = 0; i < objects; i++) {
            Object made = (i & 1) == 0 ? new Node(i) : new int[(int) (i & 7) + 1];
            if (callNative) tag(made);
            if (i % keepEvery == 0) {
                keep[slot] = made;
                slot = slot + 1 == ring ? 0 : slot + 1;
            }
            sum += made instanceof Node ? ((Node) made).value & 1 : ((int[]) made).length;
        }
        long end = System.nanoTime();
        System.out.println("ns_per_object " + (end - start) / (double) objects + " gc_ms " + (gcMillis() - gcBefore)
                + " gcs " + (gcCount() - countBefore) + " sum " + sum);
    }
}
