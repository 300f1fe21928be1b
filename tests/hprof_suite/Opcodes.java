// Most of the JVM's instructions in one class: every primitive type's arithmetic, conversions
// and comparisons, both kinds of switch, arrays of every type and dimension, type checks,
// monitors, exceptions, and each kind of invoke. Java 7 source (see Greeter.java).
import java.util.ArrayList;
import java.util.List;

public class Opcodes implements Runnable {
    private static int statics;
    private final int seed;
    private long acc;

    public Opcodes(int seed) {
        this.seed = seed;
    }

    public void run() {
        acc += seed;
    }

    public long run(int rounds) {
        long sum = 0;
        for (int i = 0; i < rounds; i++) {
            sum += ints(i) + longs(i) + (long) floats(i) + (long) doubles(i);
            sum += narrow(i) + branches(i) + switches(i) + arrays(i) + objects(i);
            sum ^= guarded(i);
        }
        Runnable r = this;
        r.run();
        return sum + acc + statics;
    }

    private static int ints(int x) {
        int a = x + 1, b = a * 3 - x, c = b / (a | 1) % 7;
        a = (a << 3) >> 1;
        b = (b >>> 2) & 0xff ^ 0x5a | c;
        a = -a;
        c++;
        statics += c;
        return a + b + c;
    }

    private static long longs(int x) {
        long a = x, b = a * 31L - 7L, c = b / (a | 1L) % 11L;
        a = (a << 5) >> 2;
        b = (b >>> 3) & 0xffffL ^ 0x3cL | c;
        return -a + b + c + (a < b ? 1 : 0) + (a == b ? 2 : 0);
    }

    private static float floats(int x) {
        float a = x * 0.5f, b = a / 3f - 1f, c = a % 2.5f;
        return -a + b * c + (a < b ? 1f : 0f) + (a > b ? 2f : 0f);
    }

    private static double doubles(int x) {
        double a = x * 0.25, b = a / 7.0 - 2.0, c = a % 1.5;
        return -a + b * c + (a <= b ? 1.0 : 0.0) + (a >= b ? 2.0 : 0.0);
    }

    private static int narrow(int x) {
        long l = x * 100000L;
        float f = l;
        double d = f;
        byte b = (byte) x;
        char c = (char) (x + 'a');
        short s = (short) (x * 300);
        int fromLong = (int) l, fromFloat = (int) f, fromDouble = (int) d;
        long fromF = (long) f, fromD = (long) d;
        float fromDF = (float) d;
        return b + c + s + fromLong + fromFloat + fromDouble + (int) (fromF + fromD) + (int) fromDF;
    }

    private static int branches(int x) {
        int r = 0;
        if (x == 0) r++;
        if (x != 1) r++;
        if (x < 2) r++;
        if (x >= 3) r++;
        if (x > 4) r++;
        if (x <= 5) r++;
        Object o = x % 2 == 0 ? null : "odd";
        if (o == null) r++;
        if (o != null) r += 2;
        int i = 0;
        do {
            i += 2;
        } while (i < x % 9);
        while (i > 0) {
            i--;
            if (i == 3) continue;
            if (i == 1) break;
        }
        return r + i;
    }

    private static int switches(int x) {
        int r;
        switch (x % 5) {
            case 0: r = 10; break;
            case 1: r = 11; break;
            case 2: r = 12; break;
            case 3: r = 13; break;
            default: r = 14;
        }
        switch (x * 1000) {
            case -5000: r += 1; break;
            case 0: r += 2; break;
            case 1000000: r += 3; break;
            default: r += 4;
        }
        switch ("k" + (x % 3)) {
            case "k0": r += 5; break;
            case "k1": r += 6; break;
            default: r += 7;
        }
        return r;
    }

    private static int arrays(int x) {
        boolean[] z = new boolean[3];
        byte[] b = new byte[3];
        char[] c = new char[3];
        short[] s = new short[3];
        int[] i = new int[3];
        long[] l = new long[3];
        float[] f = new float[3];
        double[] d = new double[3];
        String[] o = new String[3];
        int[][] grid = new int[3][4];
        Object[][][] cube = new Object[2][2][];
        z[0] = true;
        b[1] = (byte) x;
        c[2] = 'c';
        s[0] = (short) x;
        i[1] = x;
        l[2] = x;
        f[0] = x;
        d[1] = x;
        o[2] = "s" + x;
        grid[2][3] = x;
        cube[1][1] = o;
        return (z[0] ? 1 : 0) + b[1] + c[2] + s[0] + i[1] + (int) l[2] + (int) f[0] + (int) d[1]
                + o[2].length() + grid[2][3] + cube.length + grid[1].length;
    }

    private static int objects(int x) {
        List<Object> list = new ArrayList<Object>();
        list.add(Integer.valueOf(x));
        list.add("text");
        list.add(new Opcodes(x));
        int r = 0;
        for (Object o : list) {
            if (o instanceof Integer) r += (Integer) o;
            if (o instanceof String) r += ((String) o).length();
            if (o instanceof Runnable) {
                ((Runnable) o).run();
                r += ((Opcodes) o).seed;
            }
        }
        return r;
    }

    private long guarded(int x) {
        long r;
        synchronized (this) {
            r = acc + x;
        }
        try {
            if (x % 97 == 0) throw new IllegalStateException("round " + x);
            r += x;
        } catch (IllegalStateException e) {
            r -= e.getMessage().length();
        } finally {
            r ^= 0x55;
        }
        return r;
    }
}
