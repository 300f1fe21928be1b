/**
 * Allocates known numbers of objects at known sites from known callers, for the heap=sites tests.
 * Every object escapes into a static array (so the JIT cannot remove it by escape analysis), and a
 * known part is dropped before exit. Lines marked "SITE:" are found by the test from this source.
 *
 *   basic    1000 Items from callerA, 2000 from callerB (the second half of those dropped),
 *            500 int[10] from callerA, 300 String[] of length 3 from callerB (all dropped)
 *            (callerB's call line makes a call of its own first, which makes calls: the traces
 *            must still show callerB's line)
 *   threads  16 threads x 5000 Items through worker() (a quarter dropped), while 64 short threads
 *            start and end, each allocating 100 Churn objects (all kept)
 *   exceptions  100 x (an exception thrown through 3 frames and caught, then 10 Items), and 100 x
 *            (an exception thrown by the 5th of 5 recursive activations, caught by the 4th, which makes 10
 *            Items): the traces after each catch must not keep the frames the exception left
 *   multi    multianewarray, 100 times each (lengths from a parameter, not constants): int[3][4]
 *            (100 int[][], 300 int[]), Object[2][3][2] (100 + 200 Object[][] + 600 Object[]),
 *            String[2][0][5] (100 + 200 String[][] of length 0, no String[]), the partial long[5][]
 *            (100 long[][] alone), int[0][7] (100 int[][] of length 0 alone), short[2][2][2][3]
 *            (100 + 200 + 400 + 800), and int[2][-1] (throws once the outer
 *            array is made: HotSpot makes them depth first)
 *   copies   40 rounds x 5000 of Copied.clone(), Copied[].clone(), Arrays.copyOf and copyOfRange of a
 *            Copied[] and Array.newInstance(Copied.class): 200 000 Copied and 800 000 Copied[], made
 *            by what HotSpot compiles as allocating intrinsics once the loop is compiled
 *   lambdas  40 rounds x 5000 capturing lambdas (an IntSupplier of the round's number), whose
 *            objects the JDK makes through Unsafe.allocateInstance: 200 000 of one hidden class
 *   clones   20 000 x cloneRound(): a Sheep (its clone() calls super.clone()), an int[5] and a String[3]
 *            held as an Object[] cloned, each from its own line; then 100 x a clone that throws
 *            (a class that is not Cloneable, a null array): nothing made
 *   lines    twoLines() 20 000 times: it calls madeItem() from two lines, each making one Item: 20 000
 *            Items under each line's trace, interpreted first and compiled later (madeItem inlined)
 *   unload   30 rounds of 1000 Items made three calls below unloadRound (the test keeps the JIT from
 *            inlining them, so that compiled, every frame of a depth-4 trace is compiled code), every
 *            third round then AllocSitesPlugin, of a class loader of its own, made hot and dropped
 *            and a collection: its compiled code is unloaded while the Items' traces stay the same
 *   sleep N  after either mode: sleep N ms (for kill -QUIT)
 *   attach F waits (in a loop already running when an agent is attached) for the file F, then
 *            does what basic does
 */
public class AllocSites {
    static final class Item {
        final int value;
        Item(int value) { this.value = value; }
    }

    static final class Churn {
        final long value;
        Churn(long value) { this.value = value; }
    }

    static final class Copied implements Cloneable {
        final int value;
        Copied(int value) { this.value = value; }
        Copied copy() throws CloneNotSupportedException { return (Copied) clone(); }
    }

    static final class Sheep implements Cloneable {
        final int[] wool = {1, 2};
        @Override
        protected Sheep clone() throws CloneNotSupportedException {
            return (Sheep) super.clone(); // SITE:sheep
        }
    }

    static final class Goat {
        Object tryClone() throws CloneNotSupportedException { return super.clone(); }
    }

    static Object[] kept = new Object[200_000];
    static int next;

    static void makeItems(Object[] into, int from, int count) {
        for (int i = 0; i < count; i++) {
            into[from + i] = new Item(i); // SITE:item
        }
    }

    static void makeArrays(int count) {
        for (int i = 0; i < count; i++) {
            kept[next++] = new int[10]; // SITE:ints
        }
    }

    static void makeStringArrays(int count) {
        for (int i = 0; i < count; i++) {
            kept[next++] = new String[3]; // SITE:strings
        }
    }

    static void callerA() {
        makeItems(kept, next, 1000); // SITE:callerA
        next += 1000;
        makeArrays(500);
    }

    // A call that makes calls of its own, before another call on the same line: the traces of what
    // the second one allocates show this line (alloc=inject makes one position call per line).
    static int same(int n) {
        touch();
        touch();
        return n;
    }

    static int touched;

    static void touch() {
        touched += Math.abs(touched - 3);
    }

    static void callerB() {
        int start = next;
        makeItems(kept, same(next), 2000); // SITE:callerB (a call made before it on its line)
        next += 2000;
        int stringsFrom = next;
        makeStringArrays(300);
        for (int i = start + 1000; i < start + 2000; i++) kept[i] = null;
        for (int i = stringsFrom; i < stringsFrom + 300; i++) kept[i] = null;
    }

    static Object[] churned = new Object[64 * 100];

    static void churn(int index) {
        for (int i = 0; i < 100; i++) {
            churned[index * 100 + i] = new Churn(i); // SITE:churn
        }
    }

    static void worker(int index) {
        makeItems(kept, index * 5000, 5000); // SITE:worker
    }

    static void threads() throws InterruptedException {
        Thread[] workers = new Thread[16];
        for (int t = 0; t < workers.length; t++) {
            final int index = t;
            workers[t] = new Thread(() -> worker(index), "alloc-" + t);
            workers[t].start();
        }
        for (int wave = 0; wave < 8; wave++) {
            Thread[] shortLived = new Thread[8];
            for (int s = 0; s < shortLived.length; s++) {
                final int index = wave * 8 + s;
                shortLived[s] = new Thread(() -> churn(index), "churn-" + index);
                shortLived[s].start();
            }
            for (Thread thread : shortLived) thread.join();
        }
        for (Thread worker : workers) worker.join();
        for (int t = 0; t < workers.length; t++) {
            for (int i = 0; i < 5000; i += 4) kept[t * 5000 + i] = null;
        }
    }

    static void thrower(int depth) {
        if (depth == 0) throw new IllegalStateException("thrown");
        thrower(depth - 1);
    }

    static void afterCatch() {
        for (int i = 0; i < 100; i++) {
            try {
                thrower(3);
            } catch (IllegalStateException e) {
                next += 0;
            }
            makeItems(kept, next, 10); // SITE:caught
            next += 10;
        }
    }

    static void catchIn(int n) {
        if (n == 0) throw new IllegalStateException("deep");
        try {
            catchIn(n - 1); // SITE:recursing
        } catch (IllegalStateException e) {
            if (n != 1) throw e;
            makeItems(kept, next, 10); // SITE:recursion
            next += 10;
        }
    }

    static void makeMulti(int one) {
        for (int i = 0; i < 100; i++) {
            kept[next++] = new int[3 * one][4 * one]; // SITE:multiInts
            kept[next++] = new Object[2 * one][3 * one][2 * one]; // SITE:multiObjects
            kept[next++] = new String[2 * one][0][5 * one]; // SITE:multiStrings
            kept[next++] = new long[5 * one][]; // SITE:multiLongs
            kept[next++] = new int[0][7 * one]; // SITE:multiEmpty
            kept[next++] = new short[2 * one][2 * one][2 * one][3 * one]; // SITE:multiShorts
            try {
                kept[next] = new int[2 * one][-one]; // SITE:multiNegative
            } catch (NegativeArraySizeException e) {
                next += 0;
            }
        }
    }

    static void exceptions() {
        afterCatch(); // SITE:afterCatch
        for (int i = 0; i < 100; i++) {
            try {
                catchIn(4); // SITE:catchIn
            } catch (IllegalStateException e) {
                next += 0;
            }
        }
    }

    static Object[] copies = new Object[5 * 5000];

    static void copyRound(Copied model, Copied[] array, int count) throws CloneNotSupportedException {
        for (int i = 0, at = 0; i < count; i++) {
            copies[at++] = model.copy();
            copies[at++] = array.clone();
            copies[at++] = java.util.Arrays.copyOf(array, 3);
            copies[at++] = java.util.Arrays.copyOfRange(array, 1, 3);
            copies[at++] = java.lang.reflect.Array.newInstance(Copied.class, 2);
        }
    }

    static void copies() throws CloneNotSupportedException {
        Copied model = new Copied(7);
        Copied[] array = {model, model};
        for (int round = 0; round < 40; round++) copyRound(model, array, 5000);
    }

    static Object[] clones = new Object[4096];

    static void cloneRound(Sheep sheep, int[] ints, Object[] strings, int i) throws CloneNotSupportedException {
        clones[i & 4095] = sheep.clone(); // SITE:cloneSheep
        clones[(i + 1) & 4095] = ints.clone(); // SITE:cloneInts
        clones[(i + 2) & 4095] = strings.clone(); // SITE:cloneStrings
    }

    static void clones() throws CloneNotSupportedException {
        Sheep sheep = new Sheep();
        int[] ints = new int[5];
        Object[] strings = new String[3];
        for (int i = 0; i < 20000; i++) cloneRound(sheep, ints, strings, i * 3); // SITE:cloneRound
        int[] none = null;
        for (int i = 0; i < 100; i++) {
            try {
                new Goat().tryClone();
            } catch (CloneNotSupportedException e) {
                next += 0;
            }
            try {
                clones[i] = none.clone();
            } catch (NullPointerException e) {
                next += 0;
            }
        }
    }

    static void lambdaRound(int round, int count) {
        for (int i = 0; i < count; i++) {
            copies[i] = (java.util.function.IntSupplier) () -> round;
        }
    }

    static Object[] lineItems = new Object[1024];

    static void madeItem(int i) {
        lineItems[i & 1023] = new Item(i); // SITE:madeItem
    }

    static void twoLines(int i) {
        madeItem(i); // SITE:lineOne
        madeItem(i + 1); // SITE:lineTwo
    }

    static Object[] deepItems = new Object[1024];

    static void deepItem(int i) {
        deepItems[i & 1023] = new Item(i); // SITE:deepItem
    }

    static void deep1(int i) {
        deepItem(i); // SITE:deep1
    }

    static void deep2(int i) {
        deep1(i); // SITE:deep2
    }

    static void deep3(int i) {
        deep2(i); // SITE:deep3
    }

    static void unloadRound(int count) {
        for (int i = 0; i < count; i++) deep3(i);
    }

    static void unload() throws Exception {
        String first = System.getProperty("java.class.path").split(java.io.File.pathSeparator)[0];
        java.net.URL[] classes = {java.nio.file.Path.of(first).toUri().toURL()};
        for (int round = 0; round < 30; round++) {
            unloadRound(1000);
            if (round % 3 == 2) {
                try (java.net.URLClassLoader loader = new java.net.URLClassLoader(classes, null)) {
                    loader.loadClass("AllocSitesPlugin").getMethod("spin", int.class).invoke(null, 20000);
                }
                for (int gc = 0; gc < 2; gc++) System.gc();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "basic";
        if (mode.equals("threads")) {
            threads();
        } else if (mode.equals("multi")) {
            makeMulti(1);
        } else if (mode.equals("copies")) {
            copies();
        } else if (mode.equals("clones")) {
            clones(); // SITE:clones
        } else if (mode.equals("lines")) {
            for (int i = 0; i < 20000; i++) twoLines(i); // SITE:lines
        } else if (mode.equals("lambdas")) {
            for (int round = 0; round < 40; round++) lambdaRound(round, 5000);
        } else if (mode.equals("unload")) {
            unload();
        } else if (mode.equals("exceptions")) {
            exceptions(); // SITE:exceptions
        } else if (mode.equals("attach")) {
            System.out.println("AllocSites waiting");
            System.out.flush();
            while (!java.nio.file.Files.exists(java.nio.file.Path.of(args[1]))) Thread.sleep(10);
            callerA();
            callerB();
        } else {
            callerA();
            callerB();
        }
        System.out.println("AllocSites done " + mode);
        System.out.flush();
        if (args.length > 2 && args[1].equals("sleep")) Thread.sleep(Long.parseLong(args[2]));
    }
}
