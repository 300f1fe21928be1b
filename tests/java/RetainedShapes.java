import java.io.BufferedReader;
import java.io.InputStream;
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
 *     weakly by a static WeakReference: the path to it without weak references is the long one;
 *   - a class loader leak: a PluginLoader (a class loader of our own) defines PluginA and PluginB
 *     from their class files, each holding PLUGIN_ARRAYS byte[PLUGIN_BYTES / PLUGIN_ARRAYS] in a
 *     static (each smaller than the cache's, whose paths `path byte[]` finds), and stays reachable only
 *     through the static list Plugins.LOADERS (as a registry in a class of the application's loader
 *     keeps a web application's loader): the loader retains both classes and their arrays.
 * Prints "ready", then allocates nothing until a line (or the end) on stdin.
 */
public class RetainedShapes {
    static final int CACHE_ENTRIES = 32;
    static final int CACHE_BYTES = 100_000;
    static final int CHAIN_LINKS = 1000;
    static final int CHAIN_BYTES = 1000;
    static final int RING_NODES = 64;
    static final int RING_BYTES = 20_000;
    static final int PLUGIN_BYTES = 1_000_000;
    static final int PLUGIN_ARRAYS = 16;

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

    // Defined again by each PluginLoader, apart from the copies the application's loader may load.
    static final class PluginA {
        static final byte[][] DATA = plugin();
    }

    static final class PluginB {
        static final byte[][] DATA = plugin();
    }

    // Public: PluginA and PluginB, defined by another loader, are in another runtime package.
    public static byte[][] plugin() {
        byte[][] arrays = new byte[PLUGIN_ARRAYS][];
        for (int i = 0; i < PLUGIN_ARRAYS; i++) arrays[i] = new byte[PLUGIN_BYTES / PLUGIN_ARRAYS];
        return arrays;
    }

    static final class PluginLoader extends ClassLoader {
        PluginLoader() { super(RetainedShapes.class.getClassLoader()); }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("RetainedShapes$Plugin") || name.equals(PluginLoader.class.getName())) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> found = findLoadedClass(name);
                if (found != null) return found;
                // String.concat, not +: the invokedynamic of + would leave method handles in the class's
                // resolved references, which VisualVM's retained sizes count apart (docs/command.md).
                try (InputStream in = RetainedShapes.class.getResourceAsStream(name.concat(".class"))) {
                    byte[] bytes = in.readAllBytes();
                    return defineClass(name, bytes, 0, bytes.length);
                } catch (java.io.IOException e) {
                    throw new ClassNotFoundException(name, e);
                }
            }
        }
    }

    static final class Plugins {
        static final List<ClassLoader> LOADERS = new ArrayList<>();
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
        PluginLoader loader = new PluginLoader();
        for (String name : new String[] {"RetainedShapes$PluginA", "RetainedShapes$PluginB"}) {
            Class.forName(name, true, loader);  // initialized: its static array made
        }
        Plugins.LOADERS.add(loader);
        loader = null;
        System.out.println("ready");
        System.out.flush();
        if (args.length == 0 || !args[0].equals("now")) new BufferedReader(new InputStreamReader(System.in)).readLine();
        // The ring stays live in main's frame until here.
        System.out.println("finished " + ring.payload.length + " " + last.payload.length);
    }
}
