/**
 * Java 17 forms for the rewriter's JVM check (--release 17 and 25): records, a sealed hierarchy,
 * instanceof patterns, switch expressions, nest mates without accessors, lambdas and string
 * concatenation by invokedynamic. Expected counts: tests/integration/class_rewriter_jvm.py.
 */
public class Modern {
  sealed interface Expr permits Num, Add, Neg {}

  record Num(int value) implements Expr {}

  record Add(Expr left, Expr right) implements Expr {}

  record Neg(Expr inner) implements Expr {}

  static int eval(Expr e) {
    if (e instanceof Num n) return n.value();
    if (e instanceof Add a) return eval(a.left()) + eval(a.right());
    if (e instanceof Neg g) return -eval(g.inner());
    throw new IllegalArgumentException(String.valueOf(e));
  }

  static String kind(int day) {
    return switch (day) {
      case 1, 7 -> "weekend";
      case 2, 3, 4, 5, 6 -> {
        String s = "week";
        yield s + "day";
      }
      default -> "none";
    };
  }

  private static int hidden() {
    return 42;
  }

  static class Nested {
    int get() {
      return hidden();  // a nest mate's private method, called directly
    }
  }

  public static void main(String[] args) {
    Expr expr = new Add(new Num(3), new Neg(new Num(4)));
    int value = eval(expr);
    StringBuilder days = new StringBuilder();
    for (int day = 1; day <= 8; day++) days.append(kind(day).charAt(0));
    java.util.function.IntUnaryOperator twice = x -> x * 2;
    int sum = 0;
    for (int i = 0; i < 5; i++) sum += twice.applyAsInt(i);
    System.out.println("CHECK " + value + " " + days + " " + sum + " " + new Nested().get());
  }
}
