import java.io.File;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.graalvm.visualvm.lib.jfluid.heap.FieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.GCRoot;
import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;
import org.graalvm.visualvm.lib.jfluid.heap.JavaFrameGCRoot;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ObjectFieldValue;
import org.graalvm.visualvm.lib.jfluid.heap.PrimitiveArrayInstance;
import org.graalvm.visualvm.lib.jfluid.heap.ThreadObjectGCRoot;

/**
 * Opens a heap dump with VisualVM's heap library (the code VisualVM itself uses) and checks it.
 *
 *   HeapCheck histogram FILE [DUMP]   prints "count class" for every class (for comparing dumps)
 *   HeapCheck generic FILE [DUMP]     every object reference resolves, every frame root has its thread
 *   HeapCheck shapes FILE [DUMP]      generic, plus the known heap of tests/java/HeapShapes.java
 *   HeapCheck blank FILE [DUMP]       generic, plus HeapShapes dumped with primfields=n,primarrays=n
 *
 * DUMP selects the dump of a file holding several (0 = the first). Prints one line per failure and
 * a summary; exits 1 when anything failed.
 *
 *   HeapCheck MODE FILE DUMP MODE FILE DUMP ...
 *
 * checks several dumps in one JVM, one after the other, each as if alone (its own heap, counts and
 * failures): each starts with a line "HeapCheck job N: MODE FILE DUMP" and ends with its summary.
 * A reader JVM's start-up and warm-up cost more than a small dump's check, and the integration
 * tests check every dump of a file (tests/integration/readers.py).
 */
public class HeapCheck {
    static int checks = 0;
    static final List<String> failures = new ArrayList<>();

    static void check(boolean ok, String what) {
        checks++;
        if (!ok) {
            failures.add(what);
            System.out.println("FAIL: " + what);
        }
    }

    static void equal(Object expected, Object actual, String what) {
        check(String.valueOf(expected).equals(String.valueOf(actual)),
              what + ": expected " + expected + ", got " + actual);
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2 || (args.length > 3 && args.length % 3 != 0)) {
            System.err.println("usage: HeapCheck histogram|generic|shapes|blank FILE [DUMP] | (MODE FILE DUMP)...");
            System.exit(2);
        }
        if (args.length <= 3) {
            int failed = run(args[0], args[1], args.length > 2 ? Integer.parseInt(args[2]) : 0);
            System.exit(failed == 0 ? 0 : 1);
        }
        int failedJobs = 0;
        for (int i = 0; i < args.length; i += 3) {
            System.out.println("HeapCheck job " + i / 3 + ": " + args[i] + " " + args[i + 1] + " " + args[i + 2]);
            try {
                if (run(args[i], args[i + 1], Integer.parseInt(args[i + 2])) != 0) failedJobs++;
            } catch (Exception | Error e) {
                // A dump the library throws on fails its own job; the next jobs are still checked.
                e.printStackTrace(System.out);
                System.out.println("FAIL: the library rejects the dump: " + e);
                failedJobs++;
            }
        }
        System.exit(failedJobs == 0 ? 0 : 1);
    }

    /** One dump checked as if alone; returns its failures (histogram: 0). */
    static int run(String mode, String file, int dump) throws Exception {
        if (!List.of("histogram", "generic", "shapes", "blank").contains(mode)) {
            System.err.println("unknown mode " + mode);
            System.exit(2);
        }
        checks = 0;
        failures.clear();
        Heap heap = HeapFactory.createHeap(new File(file), dump);
        switch (mode) {
            case "histogram":
                histogram(heap);
                return 0;
            case "generic":
                generic(heap);
                break;
            case "shapes":
                generic(heap);
                shapes(heap);
                break;
            default:
                generic(heap);
                blank(heap);
                break;
        }
        System.out.println("HeapCheck: " + checks + " checks, " + failures.size() + " failures");
        return failures.size();
    }

    static void histogram(Heap heap) {
        Map<String, Integer> counts = new TreeMap<>();
        for (JavaClass c : heap.getAllClasses()) counts.merge(c.getName(), c.getInstancesCount(), Integer::sum);
        for (Map.Entry<String, Integer> e : counts.entrySet()) System.out.println(e.getValue() + " " + e.getKey());
    }

    static void generic(Heap heap) {
        long objects = 0;
        long unresolved = 0;
        String example = null;
        for (Iterator<Instance> it = heap.getAllInstancesIterator(); it.hasNext();) {
            Instance instance = it.next();
            objects++;
            if (instance.getJavaClass() == null) {
                unresolved++;
                example = "class of " + instance.getInstanceId();
                continue;
            }
            for (FieldValue value : instance.getFieldValues()) {
                if (!(value instanceof ObjectFieldValue)) continue;
                long id = Long.parseLong(value.getValue());
                if (id != 0 && ((ObjectFieldValue) value).getInstance() == null) {
                    unresolved++;
                    example = instance.getJavaClass().getName() + "." + value.getField().getName() + " -> " + id;
                }
            }
        }
        System.out.println("HeapCheck: " + objects + " objects, " + heap.getAllClasses().size() + " classes, "
                + heap.getGCRoots().size() + " roots");
        check(objects > 0, "the dump holds objects");
        check(unresolved == 0, unresolved + " references do not resolve, e.g. " + example);
        int frames = 0;
        for (GCRoot root : heap.getGCRoots()) {
            check(root.getInstance() != null, "root " + root.getKind() + " names an object of the dump");
            if (root instanceof JavaFrameGCRoot) {
                frames++;
                ThreadObjectGCRoot thread = ((JavaFrameGCRoot) root).getThreadGCRoot();
                check(thread != null, "a Java frame root has its thread");
                if (thread != null && thread.getStackTrace() != null) {
                    int frame = ((JavaFrameGCRoot) root).getFrameNumber();
                    check(frame < thread.getStackTrace().length,
                          "frame " + frame + " lies within its thread's stack of " + thread.getStackTrace().length);
                }
            }
        }
        check(frames > 0, "the dump has Java frame roots");
    }

    static String string(Instance s) {
        if (s == null) return null;
        Object value = s.getValueOfField("value");
        if (!(value instanceof PrimitiveArrayInstance)) return "<no value>";
        List<String> items = ((PrimitiveArrayInstance) value).getValues();
        Object coder = s.getValueOfField("coder");
        StringBuilder out = new StringBuilder();
        if (coder == null || "0".equals(String.valueOf(coder))) {
            for (String b : items) out.append((char) (Integer.parseInt(b) & 0xff));
        } else {
            for (int i = 0; i + 1 < items.size(); i += 2) {
                int lo = Integer.parseInt(items.get(i)) & 0xff, hi = Integer.parseInt(items.get(i + 1)) & 0xff;
                out.append((char) (lo | hi << 8));
            }
        }
        return out.toString();
    }

    static JavaClass cls(Heap heap, String name) {
        JavaClass c = heap.getJavaClassByName(name);
        check(c != null, "class " + name + " is in the dump");
        return c;
    }

    // primfields=n and primarrays=n: references intact, primitive values 0, arrays empty.
    static void blank(Heap heap) {
        JavaClass leaf = cls(heap, "HeapShapes$Leaf");
        JavaClass holder = cls(heap, "HeapShapes$Holder");
        if (leaf == null || holder == null) return;
        equal(100, leaf.getInstancesCount(), "Leaf instances");
        equal(0, holder.getValueOfStaticField("staticInt"), "Holder.staticInt is zeroed");
        int nonZero = 0;
        int arrays = 0;
        for (Instance one : leaf.getInstances()) {
            for (String field : new String[] {"i", "baseInt", "s"}) {
                if (!"0".equals(String.valueOf(one.getValueOfField(field)))) nonZero++;
            }
            check(one.getValueOfField("str") instanceof Instance, "leaf.str still resolves");
            Object ints = one.getValueOfField("ints");
            if (ints instanceof PrimitiveArrayInstance) {
                arrays++;
                equal(0, ((PrimitiveArrayInstance) ints).getLength(), "leaf.ints is written empty");
            }
        }
        equal(0, nonZero, "primitive fields of Leaf instances that are not 0");
        equal(100, arrays, "Leaf.ints arrays present");
    }

    static void shapes(Heap heap) {
        JavaClass leaf = cls(heap, "HeapShapes$Leaf");
        JavaClass base = cls(heap, "HeapShapes$Base");
        JavaClass holder = cls(heap, "HeapShapes$Holder");
        JavaClass marked = cls(heap, "HeapShapes$Marked");
        JavaClass stackValue = cls(heap, "HeapShapes$StackValue");
        if (leaf == null || base == null || holder == null || marked == null || stackValue == null) return;
        equal(100, leaf.getInstancesCount(), "Leaf instances");
        equal(50, base.getInstancesCount(), "Base instances (not counting subclasses)");
        equal(3, stackValue.getInstancesCount(), "StackValue instances (held on thread stacks only)");
        equal("HeapShapes$Mid", leaf.getSuperClass().getName(), "Leaf's superclass");
        equal("java.lang.Object", base.getSuperClass().getName(), "Base's superclass");

        // Statics of every kind.
        equal(42, holder.getValueOfStaticField("staticInt"), "Holder.staticInt");
        equal(1L << 40, holder.getValueOfStaticField("staticLong"), "Holder.staticLong");
        equal(3.5, holder.getValueOfStaticField("staticDouble"), "Holder.staticDouble");
        equal(true, holder.getValueOfStaticField("staticFlag"), "Holder.staticFlag");
        equal('x', holder.getValueOfStaticField("staticChar"), "Holder.staticChar");
        equal("static string", string((Instance) holder.getValueOfStaticField("staticString")), "Holder.staticString");
        equal(null, holder.getValueOfStaticField("staticNull"), "Holder.staticNull");
        equal(77, marked.getValueOfStaticField("MARK"), "Marked.MARK");
        Object leavesValue = holder.getValueOfStaticField("staticLeaves");
        check(leavesValue instanceof ObjectArrayInstance, "Holder.staticLeaves is an object array");
        if (!(leavesValue instanceof ObjectArrayInstance)) return;
        ObjectArrayInstance leaves = (ObjectArrayInstance) leavesValue;
        equal(100, leaves.getLength(), "staticLeaves length");
        equal("HeapShapes$Leaf[]", leaves.getJavaClass().getName(), "staticLeaves' class");

        // Arrays larger than a segment keep their length and contents.
        Object bigLongs = holder.getValueOfStaticField("bigLongs");
        check(bigLongs instanceof PrimitiveArrayInstance, "Holder.bigLongs is a primitive array");
        if (bigLongs instanceof PrimitiveArrayInstance) {
            PrimitiveArrayInstance longs = (PrimitiveArrayInstance) bigLongs;
            equal(400_000, longs.getLength(), "bigLongs length");
            equal("11", String.valueOf(longs.getValues().get(0)), "bigLongs[0]");
            equal("-12", String.valueOf(longs.getValues().get(399_999)), "bigLongs[399999]");
        }
        Object bigRefs = holder.getValueOfStaticField("bigRefs");
        check(bigRefs instanceof ObjectArrayInstance, "Holder.bigRefs is an object array");
        if (bigRefs instanceof ObjectArrayInstance) {
            ObjectArrayInstance refs = (ObjectArrayInstance) bigRefs;
            equal(300_000, refs.getLength(), "bigRefs length (nulls included)");
            check(refs.getValues().get(1) != null, "bigRefs[1] resolves");
            equal("near the end", string(refs.getValues().get(299_998)), "bigRefs[299998]");
            check(refs.getValues().get(299_999) == null, "bigRefs[299999] is null");
        }

        // Every field type of one instance, inherited fields included.
        Instance five = leaves.getValues().get(5);
        check(five != null, "staticLeaves[5] resolves");
        if (five == null) return;
        equal(5, five.getValueOfField("i"), "leaf.i");
        equal(true, five.getValueOfField("z"), "leaf.z");
        equal(-7, five.getValueOfField("b"), "leaf.b");
        equal('Q', five.getValueOfField("c"), "leaf.c");
        equal(-300, five.getValueOfField("s"), "leaf.s");
        equal(0x1122334455667788L, five.getValueOfField("l"), "leaf.l");
        equal(1.5f, five.getValueOfField("f"), "leaf.f");
        equal(-2.25, five.getValueOfField("d"), "leaf.d");
        equal(-5L, five.getValueOfField("midLong"), "leaf.midLong (inherited from Mid)");
        equal(1000, five.getValueOfField("baseInt"), "leaf.baseInt (inherited from Base)");
        equal("base", string((Instance) five.getValueOfField("baseName")), "leaf.baseName");
        equal(null, five.getValueOfField("baseNull"), "leaf.baseNull");
        equal(null, five.getValueOfField("nothing"), "leaf.nothing");
        equal(null, five.getValueOfField("midRef"), "leaf 5's midRef (odd: null)");
        equal("leaf-5", string((Instance) five.getValueOfField("str")), "leaf.str");
        Object next = five.getValueOfField("next");
        check(next instanceof Instance && leaf.equals(((Instance) next).getJavaClass()), "leaf.next is a Leaf");
        if (next instanceof Instance) equal(4, ((Instance) next).getValueOfField("i"), "leaf.next.i");
        Object ints = five.getValueOfField("ints");
        check(ints instanceof PrimitiveArrayInstance, "leaf.ints is a primitive array");
        if (ints instanceof PrimitiveArrayInstance) equal("[5, 6, 7]", ((PrimitiveArrayInstance) ints).getValues(), "leaf.ints");
        Instance four = leaves.getValues().get(4);
        Object midRef = four == null ? null : four.getValueOfField("midRef");
        check(midRef instanceof Instance && base.equals(((Instance) midRef).getJavaClass()), "leaf 4's midRef is a Base");

        // The keep list: arrays of every kind.
        JavaClass main = cls(heap, "HeapShapes");
        if (main == null) return;
        Instance keep = (Instance) main.getValueOfStaticField("keep");
        ObjectArrayInstance data = keep == null ? null : (ObjectArrayInstance) keep.getValueOfField("elementData");
        check(data != null, "HeapShapes.keep's elementData is in the dump");
        if (data == null) return;
        List<Instance> kept = data.getValues();
        ObjectArrayInstance withNulls = (ObjectArrayInstance) kept.get(0);
        equal(5, withNulls.getLength(), "Object[] {null, a, null, leaf, null} keeps its length");
        equal(null, withNulls.getValues().get(0), "element 0 is null");
        equal("a", string(withNulls.getValues().get(1)), "element 1");
        equal(leaves.getValues().get(0), withNulls.getValues().get(3), "element 3 is leaves[0]");
        equal(7, ((ObjectArrayInstance) kept.get(1)).getLength(), "an all-null Object[7] keeps its length");
        String[][] expected = {
            {"boolean[]", "[true, false, true]"}, {"byte[]", "[1, -2, 3]"}, {"char[]", "[h, e, y]"},
            {"short[]", "[-1, 2]"}, {"int[]", "[16909060, -1]"}, {"long[]", "[72623859790382856]"},
            {"float[]", "[0.5, -0.25]"}, {"double[]", "[6.0, -1.0E300]"},
        };
        for (int k = 0; k < expected.length; k++) {
            Instance array = kept.get(2 + k);
            equal(expected[k][0], array.getJavaClass().getName(), "kept array " + k + " class");
            equal(expected[k][1], ((PrimitiveArrayInstance) array).getValues(), expected[k][0] + " contents");
        }
        ObjectArrayInstance grid = (ObjectArrayInstance) kept.get(10);
        equal("int[][]", grid.getJavaClass().getName(), "int[3][4] class");
        equal(3, grid.getLength(), "int[3][4] length");
        equal(4, ((PrimitiveArrayInstance) grid.getValues().get(2)).getLength(), "int[3][4] rows");
        ObjectArrayInstance cube = (ObjectArrayInstance) kept.get(11);
        equal("short[][][]", cube.getJavaClass().getName(), "short[2][3][2] class");
        ObjectArrayInstance strings = (ObjectArrayInstance) kept.get(12);
        equal("java.lang.String[][]", strings.getJavaClass().getName(), "String[][] class");
        equal(null, strings.getValues().get(1), "String[][] null row");
        equal(200_000, ((PrimitiveArrayInstance) kept.get(13)).getLength(), "byte[200000] length");
        Instance intClass = kept.get(14);
        check(intClass != null, "int.class is in the dump");
        if (intClass != null) equal("java.lang.Class", intClass.getJavaClass().getName(), "int.class is a java.lang.Class instance");

        Instance mixed = kept.get(17);
        equal("HeapShapes$Mixed", mixed.getJavaClass().getName(), "kept Mixed");
        equal(7, mixed.getValueOfField("offset"), "Mixed.offset (after statics)");
        equal(9, mixed.getValueOfField("nWords"), "Mixed.nWords (between statics)");
        equal(true, mixed.getValueOfField("flag"), "Mixed.flag");
        Object mixedData = mixed.getValueOfField("data");
        check(mixedData instanceof PrimitiveArrayInstance && "[4, 5]".equals(String.valueOf(((PrimitiveArrayInstance) mixedData).getValues())),
              "Mixed.data is int[] {4, 5}: " + mixedData);

        // Threads hold StackValue objects in their frames.
        int held = 0;
        for (GCRoot root : heap.getGCRoots()) {
            if (!(root instanceof JavaFrameGCRoot) || root.getInstance() == null) continue;
            if (!stackValue.equals(root.getInstance().getJavaClass())) continue;
            ThreadObjectGCRoot thread = ((JavaFrameGCRoot) root).getThreadGCRoot();
            StackTraceElement[] stack = thread == null ? null : thread.getStackTrace();
            int frame = ((JavaFrameGCRoot) root).getFrameNumber();
            check(stack != null && frame >= 0 && frame < stack.length
                      && stack[frame].getMethodName().equals("hold"),
                  "a StackValue is held by frame HeapShapes.hold of its thread");
            held++;
        }
        equal(3, held, "StackValue frame roots");
    }
}
