import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import jdk.test.lib.hprof.model.JavaClass;
import jdk.test.lib.hprof.model.JavaHeapObject;
import jdk.test.lib.hprof.model.JavaObject;
import jdk.test.lib.hprof.model.JavaObjectArray;
import jdk.test.lib.hprof.model.JavaThing;
import jdk.test.lib.hprof.model.JavaValueArray;
import jdk.test.lib.hprof.model.Root;
import jdk.test.lib.hprof.model.Snapshot;
import jdk.test.lib.hprof.model.StackFrame;
import jdk.test.lib.hprof.model.StackTrace;
import jdk.test.lib.hprof.parser.Reader;

/**
 * Opens a binary heap dump of tests/java/HeapShapes.java with the OpenJDK test library's HPROF
 * parser (jdk.test.lib.hprof, the reader the JDK's own heap-dump tests use), resolves it, and checks
 * the known heap: instance counts, field values, references, array lengths, roots and threads.
 * Array classes are named as the file names them, in the original HPROF's form ("int[]",
 * "java.lang.Object[]"), which is also the form the parser looks up primitive array classes by.
 *
 *   OpenJdkHeapCheck read FILE DUMP     the parser reads and resolves the dump without a complaint,
 *                                       and every root names an object of the dump
 *   OpenJdkHeapCheck shapes FILE DUMP   read, plus the known heap of tests/java/HeapShapes.java
 *   OpenJdkHeapCheck alloc FILE DUMP    shapes, plus every Leaf names its allocation site in
 *                                       HeapShapes.main (heap=all)
 *
 * DUMP selects the dump of a file holding several (0 = the first). The parser reports most
 * problems as "WARNING" lines on stdout rather than exceptions: each one is a failure here. Prints
 * one line per failure and a summary; exits 1 when anything failed.
 *
 *   OpenJdkHeapCheck MODE FILE DUMP MODE FILE DUMP ...
 *
 * checks several dumps in one JVM, one after the other, each as if alone (its own snapshot, counts
 * and failures): each starts with a line "OpenJdkHeapCheck job N: MODE FILE DUMP" and ends with its
 * summary. A reader JVM's start-up and warm-up cost more than a small dump's check
 * (tests/integration/readers.py).
 */
public class OpenJdkHeapCheck {
    static int checks = 0;
    static final List<String> failures = new ArrayList<>();
    static final List<String> notes = new ArrayList<>();
    static Snapshot snapshot;

    static boolean check(boolean ok, String what) {
        checks++;
        if (!ok) failures.add(what);
        return ok;
    }

    static void equal(Object expected, Object actual, String what) {
        check(String.valueOf(expected).equals(String.valueOf(actual)),
              what + ": expected " + expected + ", got " + actual);
    }

    public static void main(String[] args) throws Exception {
        boolean usable = args.length >= 3 && args.length % 3 == 0;
        for (int i = 0; usable && i < args.length; i += 3) usable = List.of("read", "shapes", "alloc").contains(args[i]);
        if (!usable) {
            System.err.println("usage: OpenJdkHeapCheck read|shapes|alloc FILE DUMP [MODE FILE DUMP]...");
            System.exit(2);
        }
        int failedJobs = 0;
        for (int i = 0; i < args.length; i += 3) {
            if (args.length > 3) {
                System.out.println("OpenJdkHeapCheck job " + i / 3 + ": " + args[i] + " " + args[i + 1] + " " + args[i + 2]);
            }
            if (run(args[i], args[i + 1], Integer.parseInt(args[i + 2])) != 0) failedJobs++;
        }
        System.exit(failedJobs == 0 ? 0 : 1);
    }

    /** One dump checked as if alone; returns its failures. */
    static int run(String mode, String file, int dump) {
        checks = 0;
        failures.clear();
        notes.clear();
        rootsOf.clear();
        snapshot = null;
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        PrintStream capture = new PrintStream(said, true, StandardCharsets.UTF_8);
        System.setOut(capture);
        System.setErr(capture);
        try {
            // The parser reads a value at a time through its ReadBuffer: from a RandomAccessFile, its
            // default (a mapped file stays locked on Windows), that is a seek and a read system call
            // each, 19 s of CPU for a 24 MB dump of HeapShapes against 1.4 s mapped. Its own switch
            // maps the file, which one MappedByteBuffer can do below 2 GiB. The parsing is the same.
            System.setProperty("jhat.enableFileMap", String.valueOf(new File(file).length() < Integer.MAX_VALUE));
            // The parser numbers dumps from 1, after a '#'; it also reads the TRACE and FRAME records.
            snapshot = Reader.readFile(file + "#" + (dump + 1), true, 0);
            snapshot.resolve(true);
            roots();
            if (!mode.equals("read")) shapes();
            if (mode.equals("alloc")) allocationSites();
        } catch (Exception | Error e) {
            e.printStackTrace(capture);
            failures.add("the parser rejects the file: " + e);
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
        snapshot = null;  // the next job's snapshot needs the room
        rootsOf.clear();
        String parserOutput = said.toString(StandardCharsets.UTF_8);
        for (String line : parserOutput.split("\n")) {
            if (line.contains("WARNING") || line.startsWith("Warning") || line.contains("lazy read failed")) {
                failures.add("the parser says: " + line.trim());
            }
        }
        for (String line : parserOutput.replaceAll("\\.{3,}", "...").split("\n")) {
            if (!line.isBlank()) System.out.println("parser: " + line);
        }
        for (String note : notes) System.out.println(note);
        for (String failure : failures) System.out.println("FAIL: " + failure);
        System.out.println("OpenJdkHeapCheck: " + checks + " checks, " + failures.size() + " failures");
        return failures.size();
    }

    static JavaClass named(String name) {
        JavaClass found = snapshot.findClass(name);
        if (found == null) throw new AssertionError("no class " + name + " in the snapshot");
        return found;
    }

    static List<JavaHeapObject> instances(String className) {
        return Collections.list(named(className).getInstances(false));
    }

    static String text(JavaThing thing) {
        if (thing instanceof JavaObject && ((JavaObject) thing).getClazz().isString()) return thing.toString();
        return thing == null || thing == snapshot.getNullThing() ? "null" : "<" + thing + ">";
    }

    /** A null field is the parser's null thing; a null array element is Java's null. */
    static boolean isNull(JavaThing thing) {
        return thing == null || thing == snapshot.getNullThing();
    }

    static JavaThing field(JavaHeapObject object, String name) {
        JavaThing value = ((JavaObject) object).getField(name);
        if (value == null) throw new AssertionError(object + " has no field " + name);
        return value;
    }

    static String value(JavaHeapObject object, String name) {
        return field(object, name).toString();
    }

    static JavaThing staticField(String className, String name) {
        JavaThing value = named(className).getStaticField(name);
        if (value == null) throw new AssertionError(className + " has no static " + name);
        return value;
    }

    static JavaHeapObject arrayOf(JavaThing thing, String className, int length, String what) {
        boolean ok = thing instanceof JavaObjectArray || thing instanceof JavaValueArray;
        check(ok, what + ": an array, got " + text(thing));
        if (!ok) return null;
        JavaHeapObject array = (JavaHeapObject) thing;
        equal(className, javaName(array.getClazz().getName()), what + ": class");
        int actual = thing instanceof JavaObjectArray ? ((JavaObjectArray) thing).getLength()
                                                      : ((JavaValueArray) thing).getLength();
        equal(length, actual, what + ": length");
        return array;
    }

    /**
     * An array class's name as the Java language writes it: the JDK's own dumper (dumper=vm) names
     * array classes by descriptor ("[I", "[Ljava.lang.String;"), fasthprof's walk as "int[]".
     */
    static String javaName(String name) {
        int dimensions = 0;
        while (dimensions < name.length() && name.charAt(dimensions) == '[') dimensions++;
        if (dimensions == 0) return name;
        String element = name.substring(dimensions);
        switch (element) {
            case "Z": element = "boolean"; break;
            case "B": element = "byte"; break;
            case "C": element = "char"; break;
            case "S": element = "short"; break;
            case "I": element = "int"; break;
            case "J": element = "long"; break;
            case "F": element = "float"; break;
            case "D": element = "double"; break;
            default:
                if (element.startsWith("L") && element.endsWith(";")) element = element.substring(1, element.length() - 1);
        }
        return element + "[]".repeat(dimensions);
    }

    static JavaThing[] elements(JavaHeapObject array) {
        return array instanceof JavaObjectArray ? ((JavaObjectArray) array).getElements()
                                                : ((JavaValueArray) array).getElements();
    }

    static Set<JavaHeapObject> referers(JavaHeapObject object) {
        Set<JavaHeapObject> out = new HashSet<>();
        for (Enumeration<JavaThing> e = object.getReferers(); e.hasMoreElements(); ) {
            JavaThing referer = e.nextElement();
            if (referer instanceof JavaHeapObject) out.add((JavaHeapObject) referer);
        }
        return out;
    }

    static void shapes() {
        equal(100, instances("HeapShapes$Leaf").size(), "Leaf instances");
        equal(50, instances("HeapShapes$Base").size(), "Base instances (class Base itself)");
        equal(150, named("HeapShapes$Base").getInstancesCount(true), "Base instances with subclasses");
        equal(0, instances("HeapShapes$Mid").size(), "Mid instances");
        equal(3, instances("HeapShapes$StackValue").size(), "StackValue instances");
        equal(1, instances("HeapShapes$Mixed").size(), "Mixed instances");
        equal(1, instances("HeapShapes$1").size(), "anonymous Marked instances");
        equal("HeapShapes$Mid", named("HeapShapes$Leaf").getSuperclass().getName(), "Leaf's superclass");
        equal("java.lang.Object", named("HeapShapes$Base").getSuperclass().getName(), "Base's superclass");
        leaves();
        holderStatics();
        kept();
        threads();
    }

    static void leaves() {
        Map<Integer, JavaHeapObject> byIndex = new TreeMap<>();
        for (JavaHeapObject leaf : instances("HeapShapes$Leaf")) {
            byIndex.put(Integer.parseInt(value(leaf, "i")), leaf);
        }
        equal(100, byIndex.size(), "distinct Leaf.i values");
        for (Map.Entry<Integer, JavaHeapObject> entry : byIndex.entrySet()) {
            int k = entry.getKey();
            JavaHeapObject leaf = entry.getValue();
            String what = "leaf " + k;
            equal("true", value(leaf, "z"), what + ".z");
            equal("0xf9", value(leaf, "b"), what + ".b");
            equal("Q", value(leaf, "c"), what + ".c");
            equal("-300", value(leaf, "s"), what + ".s");
            equal(Long.toString(0x1122334455667788L), value(leaf, "l"), what + ".l");
            equal("1.5", value(leaf, "f"), what + ".f");
            equal("-2.25", value(leaf, "d"), what + ".d");
            equal("leaf-" + k, text(field(leaf, "str")), what + ".str");
            equal("1000", value(leaf, "baseInt"), what + ".baseInt");
            equal("base", text(field(leaf, "baseName")), what + ".baseName");
            check(isNull(field(leaf, "baseNull")), what + ".baseNull is null");
            check(isNull(field(leaf, "nothing")), what + ".nothing is null");
            equal("-5", value(leaf, "midLong"), what + ".midLong");
            JavaHeapObject ints = arrayOf(field(leaf, "ints"), "int[]", 3, what + ".ints");
            if (ints != null) {
                JavaThing[] values = elements(ints);
                equal(k + "," + (k + 1) + "," + (k + 2), values[0] + "," + values[1] + "," + values[2], what + ".ints values");
            }
            JavaThing midRef = field(leaf, "midRef");
            if (k % 2 == 0) {
                check(midRef instanceof JavaObject && ((JavaObject) midRef).getClazz().getName().equals("HeapShapes$Base"),
                      what + ".midRef is a Base, got " + text(midRef));
                if (midRef instanceof JavaObject) {
                    check(referers((JavaObject) midRef).contains(leaf), what + " is among its Base's referers");
                }
            } else {
                check(isNull(midRef), what + ".midRef is null");
            }
            JavaThing next = field(leaf, "next");
            if (k == 0) {
                check(isNull(next), "leaf 0.next is null");
            } else {
                check(next == byIndex.get(k - 1), what + ".next is leaf " + (k - 1) + ", got " + text(next));
                check(referers(byIndex.get(k - 1)).contains(leaf), what + " is among leaf " + (k - 1) + "'s referers");
            }
        }
    }

    static void holderStatics() {
        String holder = "HeapShapes$Holder";
        equal("42", staticField(holder, "staticInt"), "Holder.staticInt");
        equal(Long.toString(1L << 40), staticField(holder, "staticLong"), "Holder.staticLong");
        equal("3.5", staticField(holder, "staticDouble"), "Holder.staticDouble");
        equal("true", staticField(holder, "staticFlag"), "Holder.staticFlag");
        equal("x", staticField(holder, "staticChar"), "Holder.staticChar");
        equal("static string", text(staticField(holder, "staticString")), "Holder.staticString");
        check(isNull(staticField(holder, "staticNull")), "Holder.staticNull is null");
        JavaHeapObject leaves = arrayOf(staticField(holder, "staticLeaves"), "HeapShapes$Leaf[]", 100, "Holder.staticLeaves");
        if (leaves != null) {
            JavaThing[] elements = elements(leaves);
            for (int k = 0; k < elements.length; k++) {
                check(elements[k] instanceof JavaObject && value((JavaObject) elements[k], "i").equals(Integer.toString(k)),
                      "Holder.staticLeaves[" + k + "] is leaf " + k + ", got " + text(elements[k]));
            }
            check(referers((JavaHeapObject) elements[0]).contains(leaves), "staticLeaves is among leaf 0's referers");
            check(referers(leaves).contains(named(holder)), "class Holder is among staticLeaves's referers");
        }
        JavaHeapObject longs = arrayOf(staticField(holder, "bigLongs"), "long[]", 400_000, "Holder.bigLongs");
        if (longs != null) {
            JavaThing[] values = elements(longs);
            equal("11 0 -12", values[0] + " " + values[1] + " " + values[399_999], "Holder.bigLongs values");
        }
        JavaHeapObject refs = arrayOf(staticField(holder, "bigRefs"), "java.lang.Object[]", 300_000, "Holder.bigRefs");
        if (refs != null) {
            JavaThing[] values = elements(refs);
            check(values[1] instanceof JavaObject && value((JavaObject) values[1], "i").equals("1"),
                  "Holder.bigRefs[1] is leaf 1, got " + text(values[1]));
            equal("near the end", text(values[299_998]), "Holder.bigRefs[299998]");
            check(isNull(values[0]) && isNull(values[299_999]), "Holder.bigRefs[0] and [299999] are null");
        }
        equal("3", staticField("HeapShapes$Mixed", "s3"), "Mixed.s3");
        equal("s2", text(staticField("HeapShapes$Mixed", "s2")), "Mixed.s2");
        JavaHeapObject s1 = arrayOf(staticField("HeapShapes$Mixed", "S1"), "int[]", 1, "Mixed.S1");
        if (s1 != null) equal("1", elements(s1)[0], "Mixed.S1[0]");
        equal("77", staticField("HeapShapes$Marked", "MARK"), "Marked.MARK");
    }

    /** What HeapShapes.keep holds, in order (the ArrayList's elementData). */
    static void kept() {
        JavaThing list = staticField("HeapShapes", "keep");
        check(list instanceof JavaObject && ((JavaObject) list).getClazz().getName().equals("java.util.ArrayList"),
              "HeapShapes.keep is an ArrayList, got " + text(list));
        if (!(list instanceof JavaObject)) return;
        equal("18", value((JavaObject) list, "size"), "keep.size");
        JavaThing data = field((JavaObject) list, "elementData");
        if (!check(data instanceof JavaObjectArray, "keep.elementData is an Object[]")) return;
        JavaThing[] kept = ((JavaObjectArray) data).getElements();
        JavaHeapObject five = arrayOf(kept[0], "java.lang.Object[]", 5, "keep[0]");
        if (five != null) {
            JavaThing[] e = elements(five);
            check(isNull(e[0]) && isNull(e[2]) && isNull(e[4]), "keep[0]: nulls at 0, 2, 4");
            equal("a", text(e[1]), "keep[0][1]");
            check(e[3] instanceof JavaObject && value((JavaObject) e[3], "i").equals("0"), "keep[0][3] is leaf 0");
        }
        JavaHeapObject seven = arrayOf(kept[1], "java.lang.Object[]", 7, "keep[1]");
        if (seven != null) {
            boolean allNull = true;
            for (JavaThing e : elements(seven)) allNull &= isNull(e);
            check(allNull, "keep[1] holds only nulls");
        }
        String[][] primitives = {
            {"boolean[]", "true false true"}, {"byte[]", "0x1 0xfe 0x3"}, {"char[]", "h e y"}, {"short[]", "-1 2"},
            {"int[]", 0x01020304 + " -1"}, {"long[]", Long.toString(0x0102030405060708L)}, {"float[]", "0.5 -0.25"},
            {"double[]", "6.0 -1.0E300"},
        };
        for (int k = 0; k < primitives.length; k++) {
            String[] expected = primitives[k][1].split(" ");
            JavaHeapObject array = arrayOf(kept[2 + k], primitives[k][0], expected.length, "keep[" + (2 + k) + "]");
            if (array == null) continue;
            List<String> actual = new ArrayList<>();
            for (JavaThing e : elements(array)) actual.add(e.toString());
            equal(String.join(" ", expected), String.join(" ", actual), "keep[" + (2 + k) + "] values");
        }
        JavaHeapObject matrix = arrayOf(kept[10], "int[][]", 3, "keep[10] (int[3][4])");
        if (matrix != null) {
            for (JavaThing row : elements(matrix)) arrayOf(row, "int[]", 4, "a row of int[3][4]");
        }
        JavaHeapObject cube = arrayOf(kept[11], "short[][][]", 2, "keep[11] (short[2][3][2])");
        if (cube != null) {
            for (JavaThing plane : elements(cube)) {
                JavaHeapObject rows = arrayOf(plane, "short[][]", 3, "a plane of short[2][3][2]");
                if (rows != null) for (JavaThing row : elements(rows)) arrayOf(row, "short[]", 2, "a row of short[2][3][2]");
            }
        }
        JavaHeapObject strings = arrayOf(kept[12], "java.lang.String[][]", 3, "keep[12] (String[][])");
        if (strings != null) {
            JavaThing[] rows = elements(strings);
            JavaHeapObject first = arrayOf(rows[0], "java.lang.String[]", 2, "String[][] row 0");
            if (first != null) equal("x null", text(elements(first)[0]) + " " + text(elements(first)[1]), "String[][] row 0 values");
            check(isNull(rows[1]), "String[][] row 1 is null");
            arrayOf(rows[2], "java.lang.String[]", 0, "String[][] row 2");
        }
        arrayOf(kept[13], "byte[]", 200_000, "keep[13] (byte[200000])");
        check(kept[14] instanceof JavaObject && ((JavaObject) kept[14]).getClazz().getName().equals("java.lang.Class"),
              "keep[14] (int.class) is a java.lang.Class instance, got " + text(kept[14]));
        check(kept[16] instanceof JavaObject && ((JavaObject) kept[16]).getClazz().getName().equals("HeapShapes$1"),
              "keep[16] is the anonymous Marked, got " + text(kept[16]));
        JavaThing mixed = kept[17];
        if (check(mixed instanceof JavaObject && ((JavaObject) mixed).getClazz().getName().equals("HeapShapes$Mixed"),
                  "keep[17] is a Mixed, got " + text(mixed))) {
            JavaObject m = (JavaObject) mixed;
            equal("7 9 true", value(m, "offset") + " " + value(m, "nWords") + " " + value(m, "flag"), "Mixed fields");
            JavaHeapObject data2 = arrayOf(field(m, "data"), "int[]", 2, "Mixed.data");
            if (data2 != null) equal("4 5", elements(data2)[0] + " " + elements(data2)[1], "Mixed.data values");
        }
    }

    static String threadName(JavaHeapObject thread) {
        return thread instanceof JavaObject ? text(field(thread, "name")) : "<not an object: " + thread + ">";
    }

    static final Map<JavaHeapObject, List<Root>> rootsOf = new HashMap<>();

    /** Every root names an object of the dump; system classes and Java frames are among them. */
    static void roots() {
        Map<String, Integer> byType = new TreeMap<>();
        int unresolved = 0;
        for (Root root : snapshot.getRootsArray()) {
            byType.merge(root.getTypeName(), 1, Integer::sum);
            JavaHeapObject object = snapshot.findThing(root.getId());
            if (object == null) {
                if (unresolved++ < 5) failures.add("root " + root.getIdString() + " (" + root.getTypeName() + ") names no object");
            } else {
                rootsOf.computeIfAbsent(object, o -> new ArrayList<>()).add(root);
            }
        }
        check(unresolved == 0, unresolved + " roots name no object");
        notes.add("roots by type: " + byType);
        check(byType.getOrDefault("System Class", 0) > 100, "more than 100 system class roots: " + byType);
        check(byType.getOrDefault("Java Local", 0) >= 6, "at least 6 Java frame roots: " + byType);
        notes.add("objects: " + Collections.list(snapshot.getThings()).size() + ", classes: "
                  + snapshot.getClassesArray().length);
    }

    static void threads() {

        Set<String> threadNames = new HashSet<>();
        for (JavaHeapObject thread : Collections.list(named("java.lang.Thread").getInstances(true))) {
            threadNames.add(threadName(thread));
        }
        for (String expected : new String[] {"main", "holder-0", "holder-1", "holder-2"}) {
            check(threadNames.contains(expected), "a java.lang.Thread named " + expected + " (have " + threadNames + ")");
        }
        // Each holder thread holds a StackValue (reachable only from its frame) and its "held-by-n".
        for (JavaHeapObject value : instances("HeapShapes$StackValue")) {
            String n = value(value, "n");
            List<Root> roots = rootsOf.getOrDefault(value, List.of());
            boolean framed = false;
            for (Root root : roots) {
                framed |= root.getType() == Root.JAVA_LOCAL && threadName(root.getReferer()).equals("holder-" + n);
            }
            check(framed, "StackValue " + n + " is a Java frame root of thread holder-" + n + ", roots: " + describe(roots));
            check(referers(value).isEmpty(), "nothing but its frame refers to StackValue " + n);
        }
        int heldBy = 0;
        for (Map.Entry<JavaHeapObject, List<Root>> entry : rootsOf.entrySet()) {
            String text = text(entry.getKey());
            if (!text.startsWith("held-by-")) continue;
            for (Root root : entry.getValue()) {
                if (root.getType() == Root.JAVA_LOCAL && threadName(root.getReferer()).equals("holder-" + text.substring(8))) {
                    heldBy++;
                    break;
                }
            }
        }
        equal(3, heldBy, "\"held-by-n\" strings that are Java frame roots of thread holder-n");
    }

    static String describe(List<Root> roots) {
        List<String> out = new ArrayList<>();
        for (Root root : roots) {
            JavaHeapObject referer = root.getReferer();
            out.add(root.getTypeName() + (referer == null ? "" : " of " + threadName(referer)));
        }
        return out.toString();
    }

    static void allocationSites() {
        int inMain = 0;
        for (JavaHeapObject leaf : instances("HeapShapes$Leaf")) {
            StackTrace trace = snapshot.getSiteTrace(leaf);
            StackFrame[] frames = trace == null ? new StackFrame[0] : trace.getFrames();
            if (frames.length > 0 && frames[0].getClassName().equals("HeapShapes")
                && frames[0].getMethodName().equals("main") && frames[0].getMethodSignature().equals("([Ljava/lang/String;)V")
                && frames[0].getSourceFileName().equals("HeapShapes.java") && !frames[0].getLineNumber().startsWith("(")) {
                inMain++;
            } else if (inMain == 0) {
                failures.add("a Leaf's allocation site: " + describe(frames));
            }
        }
        equal(100, inMain, "Leaf objects allocated in HeapShapes.main (HeapShapes.java, with a line number)");
    }

    static String describe(StackFrame[] frames) {
        List<String> out = new ArrayList<>();
        for (StackFrame frame : frames) {
            out.add(frame.getClassName() + "." + frame.getMethodName() + frame.getMethodSignature()
                    + " (" + frame.getSourceFileName() + ":" + frame.getLineNumber() + ")");
        }
        return out.isEmpty() ? "no trace" : String.join(" <- ", out);
    }
}
