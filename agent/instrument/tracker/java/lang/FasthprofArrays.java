/*
 * Array copies for the tracker classes, without java.util.Arrays (instrumented code, which the
 * tracker must not call): System.arraycopy is a native.
 */
package java.lang;

final class FasthprofArrays {
    private FasthprofArrays() {}

    /** A copy of a at length size (cut or padded with zeros). */
    static int[] copy(int[] a, int size) {
        int[] b = new int[size];
        System.arraycopy(a, 0, b, 0, a.length < size ? a.length : size);
        return b;
    }

    static long[] copy(long[] a, int size) {
        long[] b = new long[size];
        System.arraycopy(a, 0, b, 0, a.length < size ? a.length : size);
        return b;
    }
}
