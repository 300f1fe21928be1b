import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * A large live heap for tests/integration/heap_dump_large.py: about 2 GB, mostly primitive arrays,
 * several Object[]s of millions of elements with runs of nulls, one long[] and one Object[] far
 * larger than a 1 MiB heap dump segment, and a moderate number of objects (about 110 000 of its
 * own), so that the JVM's tag map stays small. Every value is a function of its position, so that
 * the test can check samples. Prints "ready" once built, then exits when a line arrives on stdin.
 *
 * Argument: the megabytes of byte[1 MiB] arrays (default 1300; the rest is about 800 MB).
 */
public class HeapLarge {
    static final int POOL = 100_000;

    static final class Value {
        final int n;
        final long twice;
        Value(int n) { this.n = n; this.twice = 2L * n; }
    }

    // Everything the test looks at hangs off these statics.
    static Value[] pool;             // the objects the Object[]s refer to
    static byte[][] bytes;           // byte[1 MiB] each: [0] = k, [1 << 19] = k * 3, [last] = -k
    static long[][] longs;           // 50 x long[1 M]: element j of array k = k * 1_000_003 + j
    static int[][] ints;             // 2000 x int[20 000] (several per segment): j ^ k
    static long[] hugeLongs;         // long[16 M] (128 MB): element j = j * 7 - 5
    static Object[] hugeRefs;        // Object[12 M] (96 MB in a dump), no null: element i = pool[i % POOL]
    static Object[][] refs;          // Object[]s with nulls, see below
    static Object[][] small;         // 300 x Object[1000], odd indices null: element i = pool[(k + i) % POOL]

    public static void main(String[] args) throws Exception {
        int byteArrays = args.length > 0 ? Integer.parseInt(args[0]) : 1300;

        pool = new Value[POOL];
        for (int i = 0; i < POOL; i++) pool[i] = new Value(i);

        bytes = new byte[byteArrays][];
        for (int k = 0; k < byteArrays; k++) {
            byte[] b = new byte[1 << 20];
            b[0] = (byte) k;
            b[1 << 19] = (byte) (k * 3);
            b[(1 << 20) - 1] = (byte) -k;
            bytes[k] = b;
        }
        longs = new long[50][];
        for (int k = 0; k < longs.length; k++) {
            long[] l = new long[1 << 20];
            for (int j = 0; j < l.length; j++) l[j] = k * 1_000_003L + j;
            longs[k] = l;
        }
        ints = new int[2000][];
        for (int k = 0; k < ints.length; k++) {
            int[] a = new int[20_000];
            for (int j = 0; j < a.length; j++) a[j] = j ^ k;
            ints[k] = a;
        }
        hugeLongs = new long[16 << 20];
        for (int j = 0; j < hugeLongs.length; j++) hugeLongs[j] = j * 7L - 5;
        hugeRefs = new Object[12_000_000];
        for (int i = 0; i < hugeRefs.length; i++) hugeRefs[i] = pool[i % POOL];

        refs = new Object[4][];
        refs[0] = new Object[3_000_000];  // every third element null, starting with the first
        for (int i = 0; i < refs[0].length; i++) if (i % 3 != 0) refs[0][i] = pool[i % POOL];
        refs[1] = new Object[2_000_000];  // a leading run of 1 M nulls (8 MB in the dump)
        for (int i = 1_000_000; i < refs[1].length; i++) refs[1][i] = pool[(i * 7) % POOL];
        refs[2] = new Object[2_500_000];  // two elements, then 1.27 M trailing nulls
        refs[2][0] = pool[0];
        refs[2][1_234_567] = pool[4567];
        refs[3] = new Object[1_000_000];  // all null

        small = new Object[300][];
        for (int k = 0; k < small.length; k++) {
            Object[] s = new Object[1000];
            for (int i = 0; i < s.length; i += 2) s[i] = pool[(k + i) % POOL];
            small[k] = s;
        }

        System.gc();
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        in.readLine();
        System.out.println("bye " + pool.length + " " + bytes.length);
    }
}
