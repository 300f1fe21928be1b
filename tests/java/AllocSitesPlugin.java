/**
 * AllocSites unload's throwaway class: loaded through a class loader of its own (no parent), made
 * hot so that the JIT compiles it, then dropped with its loader, so that a collection unloads the
 * class and the JVM its compiled code (CompiledMethodUnload).
 */
public class AllocSitesPlugin {
    static Object sink;

    public static void spin(int n) {
        for (int i = 0; i < n; i++) sink = make(i);
    }

    static Object make(int i) {
        return new int[(i & 7) + 1];
    }
}
