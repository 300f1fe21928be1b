import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A heap of known retained sizes and paths for `fasthprof dominators` and `fasthprof path`:
 *   - cache: a static HashMap of CACHE_ENTRIES byte[CACHE_BYTES] that nothing else holds;
 *   - chain: a static list of CHAIN_LINKS Links, each with its own byte[CHAIN_BYTES];
 *   - a ring of RING_NODES Links, each with a byte[RING_BYTES], held only by a local variable of
 *     main's frame;
 *   - one Target held strongly through holder (static -> Holder.items -> ArrayList -> array) and
 *     weakly by a static WeakReference: the path to it without weak references is the long one.
 * Prints "ready", then allocates nothing until a line (or the end) on stdin.
 */
public class RetainedShapes {
    static final int CACHE_ENTRIES = 32;
    static final int CACHE_BYTES = 100_000;
    static final int CHAIN_LINKS = 1000;
    static final int CHAIN_BYTES = 1000;
    static final int RING_NODES = 64;
    static final int RING_BYTES = 20_000;

    static final class Link {
        Link next;
        byte[] payload;
        Link(Link next, int bytes) { this.next = next; this.payload = new byte[bytes]; }
    }

    static final class Target {
        final long[] data = new long[1000];
    }

    static final class Holder {
        final List<Object> items = new ArrayList<>();
    }

    static Map<String, byte[]> cache = new HashMap<>();
    static Link chain;
    static Holder holder = new Holder();
    static WeakReference<Target> weak;

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < CACHE_ENTRIES; i++) cache.put("entry-" + i, new byte[CACHE_BYTES]);
        for (int i = 0; i < CHAIN_LINKS; i++) chain = new Link(chain, CHAIN_BYTES);
        Link ring = new Link(null, RING_BYTES);
        Link last = ring;
        for (int i = 1; i < RING_NODES; i++) last = new Link(last, RING_BYTES);
        ring.next = last;
        Target target = new Target();
        holder.items.add(target);
        weak = new WeakReference<>(target);
        target = null;
        System.out.println("ready");
        System.out.flush();
        if (args.length == 0 || !args[0].equals("now")) new BufferedReader(new InputStreamReader(System.in)).readLine();
        // The ring stays live in main's frame until here.
        System.out.println("finished " + ring.payload.length + " " + last.payload.length);
    }
}
