/*
 * FasthprofAllocs.classSite's answers: (call, class) -> site, open addressing. Never changed once
 * published: a site is added to a copy (under FasthprofAllocs' lock), so that a reader without the
 * lock always sees a consistent table.
 */
package java.lang;

final class FasthprofClassSites {
    private final Class<?>[] classes;
    private final int[] calls;
    private final int[] sites;
    private int size;

    FasthprofClassSites(int capacity) {
        classes = new Class<?>[capacity];
        calls = new int[capacity];
        sites = new int[capacity];
    }

    /** The site of (c, call), -1 when none. */
    int find(Class<?> c, int call) {
        int mask = classes.length - 1;
        for (int i = (System.identityHashCode(c) ^ call) & mask; ; i = (i + 1) & mask) {
            Class<?> k = classes[i];
            if (k == null) {
                return -1;
            }
            if (k == c && calls[i] == call) {
                return sites[i];
            }
        }
    }

    /** A copy with (c, call) -> site added, twice as large once half full. */
    FasthprofClassSites with(Class<?> c, int call, int site) {
        FasthprofClassSites grown = new FasthprofClassSites(size * 2 + 2 > classes.length ? classes.length * 2 : classes.length);
        for (int i = 0; i < classes.length; i++) {
            if (classes[i] != null) {
                grown.put(classes[i], calls[i], sites[i]);
            }
        }
        grown.put(c, call, site);
        return grown;
    }

    private void put(Class<?> c, int call, int site) {
        int mask = classes.length - 1;
        int i = (System.identityHashCode(c) ^ call) & mask;
        while (classes[i] != null) {
            i = (i + 1) & mask;
        }
        classes[i] = c;
        calls[i] = call;
        sites[i] = site;
        size++;
    }
}
