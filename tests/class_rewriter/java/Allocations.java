/**
 * A program that allocates known numbers of each kind, for the allocation-site injection of the
 * class rewriter (tests/integration/class_rewriter_jvm.py ALLOCATIONS, tests/unit/
 * class_rewriter_alloc_test.cpp): `new` as a branch target (a conditional, a do-while loop), in a
 * try block, nested in another's constructor arguments, before super(); newarray, anewarray,
 * multianewarray of 2, 3 and 4 dimensions; an array whose length is negative (counted, then thrown).
 */
public class Allocations {
  static class A {}

  static class B extends A {}

  static final class Pair {
    final Object left;
    final Object right;

    Pair(Object left, Object right) {
      this.left = left;
      this.right = right;
    }
  }

  static class Box {
    final Object held;

    Box(Object held) {
      this.held = held;
    }
  }

  static final class Holder extends Box {
    Holder(int size) {
      super(size > 0 ? new StringBuilder(size) : new Object());  // before super(): uninitializedThis
    }
  }

  static Object sink;

  static A choose(boolean first) {
    return first ? new A() : new B();  // new B is the conditional's target
  }

  static int loop(int n) {
    int made = 0;
    do {
      sink = new A();  // the loop's backward branch lands on the new
      made++;
    } while (--n > 0);
    return made;
  }

  static void tryNew(int n) {
    for (int i = 0; i < n; i++) {
      try {
        sink = new int[i - 1];  // -1 the first time: counted, then NegativeArraySizeException
      } catch (NegativeArraySizeException e) {
        sink = new String[1];
      }
    }
  }

  /** Whether the multi-dimensional arrays came out in their shapes (the injected code keeps the counts' order). */
  static boolean arrays(int n) {
    sink = new long[n];
    sink = new String[n];
    sink = new int[n][];
    char[][] chars = new char[2][n];
    long[][][] longs = new long[2][3][n];
    byte[][][][] bytes = new byte[1][2][3][n];
    String[][] strings = new String[n][2];
    return chars.length == 2 && chars[1].length == n && longs.length == 2 && longs[1].length == 3
        && longs[1][2].length == n && bytes.length == 1 && bytes[0].length == 2 && bytes[0][1].length == 3
        && bytes[0][1][2].length == n && strings.length == n && strings[4].length == 2;
  }

  static void nested() {
    sink = new Pair(new A(), new int[3]);  // allocations with an uninitialized Pair on the stack
  }

  static void uninitializedInFrame(boolean first) {
    sink = new Pair(first ? new A() : new B(), null);  // the join's frame holds uninitialized(the new Pair)
  }

  public static void main(String[] args) {
    for (int i = 0; i < 5; i++) sink = choose(i < 3);
    int made = loop(4);
    tryNew(3);
    boolean shapes = arrays(5) & arrays(5);
    nested();
    uninitializedInFrame(true);
    uninitializedInFrame(false);
    sink = new Holder(4);
    sink = new Holder(0);
    System.out.println(shapes ? "CHECK" : "WRONG SHAPE");
    System.out.println(made);
  }
}
