import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.ArrayList;
import java.util.List;

/**
 * Type annotations inside method bodies (RuntimeVisibleTypeAnnotations of the Code attribute:
 * local variables, new, casts, instanceof, method references, type arguments) and local
 * variable tables, for the rewriter's unit test and JVM check.
 */
public class TypeAnnotated {
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.TYPE_USE)
  @interface Marked {
    String value() default "";
  }

  static int annotated(Object input) {
    @Marked("local") String text = String.valueOf(input);
    List<@Marked String> list = new @Marked ArrayList<>();
    list.add(text);
    if (input instanceof @Marked Integer) {
      return (@Marked Integer) input + list.size();
    }
    java.util.function.Supplier<List<String>> make = ArrayList<@Marked("arg") String>::new;
    try (java.io.@Marked StringReader reader = new java.io.StringReader(text)) {
      return make.get().size() + reader.read();
    } catch (java.io.@Marked IOException e) {
      return -1;
    }
  }

  public static void main(String[] args) {
    int sum = 0;
    for (Object o : new Object[] {1, "two", 3.0}) sum += annotated(o);
    System.out.println("CHECK " + sum);
  }
}
