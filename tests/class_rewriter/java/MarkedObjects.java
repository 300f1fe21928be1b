import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * The mark calls after each allocation (the class rewriter's RewritePlan::marks) against the
 * objects themselves (tests/integration/class_rewriter_jvm.py MARKED_SITES): run with "marks",
 * every object this program makes is handed, right after it was made, to the test tracker's
 * expectMarked (through `made`, a static call whose MethodHandle was looked up once: no
 * allocation of its own here), which checks that exactly that object was marked, once; `done`
 * after each case checks that nothing else was. Objects the program cannot see (javac's
 * StringBuilder of a concatenation under --release 8, an enum's $VALUES) are claimed by class and
 * their number printed ("HIDDEN class n"). Objects whose allocation threw (a constructor that
 * throws, a negative length) are counted and never marked. Without "marks" nothing is checked and
 * the output is the same less the HIDDEN lines. No varargs call and no concatenation outside
 * `concatenation`: those would make objects the program does not see.
 */
public class MarkedObjects {
  private static final MethodHandle EXPECT = tracker("expectMarked", Object.class, void.class);
  private static final MethodHandle NO_MORE = tracker("expectNoMoreMarked", String.class, void.class);
  private static final MethodHandle CLAIM = tracker("claimMarked", String.class, int.class);
  private static boolean checking;
  static Object sink;

  static class A {}

  static class B extends A {}

  static class Box {
    final Object held;

    Box(Object held) {
      this.held = held;
    }

    Box() {
      this(new A());  // this(...): an argument made before the uninitializedThis is initialized
    }
  }

  static final class Pair {
    final Object left;
    final Object right;

    Pair(Object left, Object right) {
      this.left = left;
      this.right = right;
    }
  }

  static final class Wide {
    final long first;
    final double second;

    Wide(long first, double second) {
      this.first = first;
      this.second = second;
    }
  }

  static final class Holder extends Box {
    Holder(int size) {
      super(size > 0 ? new StringBuilder(size) : new Object());  // before super()
    }
  }

  /** Made by `new Remembered();` as a statement: it keeps itself so that the program can claim it. */
  static final class Remembered {
    static Remembered last;

    Remembered() {
      last = this;
    }
  }

  static final class Fails {
    Fails(int n) {
      if (n < 0) throw new IllegalStateException("negative");  // the object is counted, never marked
    }
  }

  static class Sheep implements Cloneable {
    Sheep copy() {
      try {
        return (Sheep) super.clone();  // invokespecial Object.clone: a sure clone
      } catch (CloneNotSupportedException e) {
        throw rethrow(e);
      }
    }
  }

  static final class Lamb extends Sheep {}

  enum Color { RED, GREEN }

  final class Inner {}

  static MethodHandle tracker(String name, Class<?> parameter, Class<?> result) {
    try {
      Class<?> tracker = Class.forName("java.lang.FasthprofTracker");
      return MethodHandles.publicLookup().findStatic(tracker, name, MethodType.methodType(result, parameter));
    } catch (ReflectiveOperationException e) {
      throw rethrow(e);
    }
  }

  @SuppressWarnings("unchecked")
  static <E extends Throwable> RuntimeException rethrow(Throwable e) throws E {
    throw (E) e;
  }

  /** The program made `made` just now: the tracker must have been given exactly it, once. */
  static <T> T made(T made) {
    if (checking) {
      try {
        EXPECT.invokeExact((Object) made);
      } catch (Throwable e) {
        throw rethrow(e);
      }
    }
    return made;
  }

  /** Every object marked so far was claimed. */
  static void done(String where) {
    if (!checking) return;
    try {
      NO_MORE.invokeExact(where);
    } catch (Throwable e) {
      throw rethrow(e);
    }
  }

  /** Claims the objects of `className` marked and not claimed yet, and prints how many. */
  static void hidden(String className) {
    if (!checking) return;
    int claimed;
    try {
      claimed = (int) CLAIM.invokeExact(className);
    } catch (Throwable e) {
      throw rethrow(e);
    }
    System.out.print("HIDDEN ");
    System.out.print(className);
    System.out.print(' ');
    System.out.println(claimed);
  }

  static void conditional(boolean c, Object a, Object b) {
    sink = made(new Box(c ? a : b));
    sink = made(new Pair(c ? made(new A()) : made(new B()), made(new int[c ? 1 : 2])));
    sink = made(new Wide(c ? 1L : 2L, c ? 1.5 : 2.5));  // category-2 arguments, each from a branch
    Box box = made(new Box(c ? new A() : new B()));  // the argument claimed through the box
    made(box.held);
    done("conditional");
  }

  static void nested(int n) {
    Box outer = made(new Box(new Box(new A())));  // javac's shape, nothing between
    Box inner = made((Box) outer.held);
    made(inner.held);
    sink = made(new Box(made(new Box(made(new A())))));
    Box chained = made(new Box());  // this(new A())
    made(chained.held);
    Holder holder = made(new Holder(n));
    made(holder.held);
    MarkedObjects self = made(new MarkedObjects());
    made(self.new Inner());
    Object anonymous = made(new Object() {});
    sink = anonymous;
    done("nested");
  }

  static void statement() {
    new Remembered();  // new, dup, invokespecial, pop
    made(Remembered.last);
    done("statement");
  }

  static int arrays(int n) {
    boolean[] z = made(new boolean[n]);
    byte[] b = made(new byte[n]);
    char[] c = made(new char[n]);
    short[] s = made(new short[n]);
    int[] i = made(new int[n]);
    long[] j = made(new long[n]);
    float[] f = made(new float[n]);
    double[] d = made(new double[n]);
    String[] strings = made(new String[n]);
    Object[] objects = made(new Object[] {made(new A()), null});
    int[][] rows = made(new int[n][]);
    done("arrays");
    return z.length + b.length + c.length + s.length + i.length + j.length + f.length + d.length + strings.length
        + objects.length + rows.length;
  }

  static int multi(int n) {
    int[][] two = made(new int[2][n]);
    long[][][] three = made(new long[2][3][n]);
    String[][] zeroFirst = made(new String[0][n]);
    int[][][] zeroMiddle = made(new int[3][0][n]);
    char[][][] partial = made(new char[2][n][]);  // multianewarray of 2 dimensions of [[[C
    int thrown = 0;
    try {
      sink = new int[2][-n];  // counted, then NegativeArraySizeException: never marked
    } catch (NegativeArraySizeException e) {
      thrown++;
    }
    try {
      sink = new long[-n][3][2];
    } catch (NegativeArraySizeException e) {
      thrown++;
    }
    done("multi");
    return two[1].length + three[1][2].length + zeroFirst.length + zeroMiddle[2].length + partial[1].length + thrown;
  }

  static int clones(int n) {
    int[] ints = made(new int[n]);
    int[] intsCopy = made(ints.clone());
    String[] strings = made(new String[n]);
    String[] stringsCopy = made(strings.clone());
    long[][] grid = made(new long[2][n]);
    long[][] gridCopy = made(grid.clone());
    Sheep sheep = made(new Sheep());
    Sheep dolly = made(sheep.copy());
    Lamb lamb = made(new Lamb());
    Sheep lambCopy = made(lamb.copy());  // Object.clone makes a Lamb
    Color[] colors = made(Color.values());  // the enum's own clone of $VALUES
    for (Color color : colors) made(color);
    hidden("[LMarkedObjects$Color;");  // $VALUES, made in Color's <clinit>
    done("clones");
    return intsCopy.length + stringsCopy.length + gridCopy.length + (dolly != sheep ? 1 : 0)
        + (lambCopy instanceof Lamb ? 1 : 0);
  }

  static A makeA() {
    return new A();
  }

  static int lambdas(int n) {
    Supplier<A> lambda = () -> new A();
    IntFunction<long[]> arrayReference = long[]::new;  // javac writes a lambda method with the newarray
    Supplier<A> reference = MarkedObjects::makeA;
    int made = 0;
    for (int k = 0; k < n; k++) {
      sink = made(lambda.get());
      sink = made(arrayReference.apply(k));
      sink = made(reference.get());
      made += 3;
    }
    done("lambdas");
    return made;
  }

  static int throwing(int n) {
    int failed = 0;
    for (int k = -1; k <= n; k++) {
      try {
        sink = made(new Fails(k));
      } catch (IllegalStateException e) {
        made(e);  // made in Fails' constructor, marked there
        failed++;
      }
    }
    done("throwing");
    return failed;
  }

  static Object inTry(int n) {
    Object o;
    try {
      o = made(new A());
      if (n < 0) throw made(new IllegalArgumentException());
    } catch (IllegalArgumentException e) {
      o = made(new B());
    }
    try {
      sink = new Box(n > 0 ? o : null);  // the try range starts at the new
    } finally {
      made(sink);
    }
    done("inTry");
    return o;
  }

  static String concatenation(int n, Object o) {
    String s = "n=" + n + " o=" + (o == null ? "none" : "some") + ' ' + 2.5;
    hidden("java.lang.StringBuilder");  // --release 8: one per concatenation, the program never sees it
    done("concatenation");
    return s;
  }

  static long boxing(int n) {
    Integer boxed = n;  // Integer.valueOf: made in the JDK, no site here
    Long wide = (long) n;
    List<Integer> list = made(new ArrayList<Integer>());
    list.add(n);
    Object[] mixed = made(new Object[] {n, 2L, 'c', true});
    done("boxing");
    return boxed + wide + list.get(0) + mixed.length;
  }

  public static void main(String[] args) {
    checking = args.length > 0 && args[0].equals("marks");
    done("start");
    for (int k = 0; k < 3; k++) conditional(k == 1, "a", "b");
    nested(2);
    nested(0);
    statement();
    System.out.println(arrays(3));
    System.out.println(multi(4));
    System.out.println(clones(2));
    System.out.println(lambdas(2));
    System.out.println(throwing(1));
    sink = inTry(1);
    sink = inTry(-1);
    System.out.println(concatenation(7, null));
    System.out.println(boxing(5));
    done("end");
    System.out.println("CHECK");
  }
}
