import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;

/**
 * What tagging each object costs when injected code asks for it (issue 28, bench/tag_cost_bench.py):
 * an allocation loop of small objects and arrays, one in `keepEvery` kept alive in a ring of `ring`
 * slots (so the tag map holds live and dying objects, as a program's would), with a native call per
 * object in mode `native` (the floor agent's Java_TagCost_tag, tagging or not), or in mode `weak`
 * with no agent: each object held by a WeakReference in the thread's own list beside its site, the
 * list swept of cleared references when full, live objects counted per site at the end (an
 * identity for live counts kept by Java code instead of the tag map). Prints the loop's time per
 * object and what the collector spent (its own beans), start-up left out.
 */
public class TagCost {
    static native void tag(Object o);

    static final class Node {
        final long value;
        Node next;
        Node(long value) { this.value = value; }
    }

    /** Objects by their WeakReference, with their sites; cleared references dropped when full. */
    static final class WeakList {
        @SuppressWarnings("unchecked")
        WeakReference<Object>[] refs = new WeakReference[1 << 12];
        int[] sites = new int[1 << 12];
        int size;

        // Cleared by the first collection after it was made: the list is swept then, so that the
        // references of objects that died are dropped before they outlive a second collection.
        WeakReference<Object> sentinel = new WeakReference<>(new Object());

        void track(Object o, int site) {
            if (size == refs.length || ((size & 1023) == 0 && sentinel.refersTo(null))) {
                sweep();
                sentinel = new WeakReference<>(new Object());
            }
            refs[size] = new WeakReference<>(o);
            sites[size++] = site;
        }

        void sweep() {
            int kept = 0;
            for (int i = 0; i < size; i++) {
                if (!refs[i].refersTo(null)) {
                    refs[kept] = refs[i];
                    sites[kept++] = sites[i];
                }
            }
            java.util.Arrays.fill(refs, kept, size, null);
            size = kept;
            if (size * 2 > refs.length) {
                refs = java.util.Arrays.copyOf(refs, refs.length * 2);
                sites = java.util.Arrays.copyOf(sites, sites.length * 2);
            }
        }

        long[] liveBySite(int siteCount) {
            long[] live = new long[siteCount];
            for (int i = 0; i < size; i++) if (!refs[i].refersTo(null)) live[sites[i]]++;
            return live;
        }
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
        WeakList weak = args[1].equals("weak") ? new WeakList() : null;
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
            if (weak != null) weak.track(made, (int) (i & 3));
            if (i % keepEvery == 0) {
                keep[slot] = made;
                slot = slot + 1 == ring ? 0 : slot + 1;
            }
            sum += made instanceof Node ? ((Node) made).value & 1 : ((int[]) made).length;
        }
        long end = System.nanoTime();
        System.out.println("ns_per_object " + (end - start) / (double) objects + " gc_ms " + (gcMillis() - gcBefore)
                + " gcs " + (gcCount() - countBefore) + " sum " + sum);
        if (weak != null) {
            System.gc();
            long counted = System.nanoTime();
            long[] live = weak.liveBySite(4);
            long total = live[0] + live[1] + live[2] + live[3];
            System.out.println("weak_list " + weak.size + " live " + total + " (ring " + ring + ") count_ms "
                    + (System.nanoTime() - counted) / 1_000_000);
        }
        java.lang.ref.Reference.reachabilityFence(keep);
    }
}
