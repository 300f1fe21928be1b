// Target of the JDK 8 hprof suite's option matrix (tests/integration/hprof_suite.py): classes
// whose static and instance fields hold every kind of value, an interface, generics, formatting,
// and a run through Opcodes, which touches most of the JVM's instructions. Java 7 source, so that
// it also compiles with --release 7 (class files with StackMapTable frames of that version).
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class Greeter {
    interface Named {
        String name();
    }

    static class Base implements Named {
        static int baseCount;
        static long baseTotal = 1L << 40;
        static byte baseFlag = 3;
        static short baseShort = 300;
        static Object baseShared = "shared";
        int id;
        long stamp;
        byte small;
        short mid;
        Object payload;

        Base(int id) {
            this.id = id;
            this.stamp = id * 1000L;
            this.small = (byte) id;
            this.mid = (short) (id * 7);
            this.payload = new int[id % 5 + 1];
            baseCount++;
        }

        public String name() {
            return "base-" + id;
        }
    }

    static class Derived extends Base {
        static char mark = 'd';
        static double ratio = 0.75;
        float weight;
        boolean odd;
        Base partner;

        Derived(int id, Base partner) {
            super(id);
            this.weight = id / 3.0f;
            this.odd = (id & 1) == 1;
            this.partner = partner;
        }

        @Override
        public String name() {
            return "derived-" + id + (odd ? "-odd" : "-even");
        }
    }

    static final List<Named> KEPT = new ArrayList<Named>();

    public static void main(String[] args) throws Exception {
        Map<String, Named> byName = new HashMap<String, Named>();
        Base previous = null;
        for (int i = 0; i < 500; i++) {
            Base made = (i % 3 == 0) ? new Base(i) : new Derived(i, previous);
            byName.put(made.name(), made);
            if (i % 10 == 0) KEPT.add(made);
            previous = made;
        }
        long checksum = new Opcodes(17).run(2000);
        System.out.println(String.format("Greetings from %d objects, %d kept, %d bases, checksum %x",
                byName.size(), KEPT.size(), Base.baseCount, checksum));
    }
}
