import java.util.ArrayList;
import java.util.List;

/**
 * A service-like program with many classes: defines the given number of empty classes through a
 * class loader of its own, keeps them, prints "ready", then waits so that dumps can be requested. Every heap dump by the JVM's own dumper
 * numbers all loaded classes again, so a few dumps of this program take the JDK's class serials
 * past 100 000.
 *
 * Usage: ManyClasses <classes> <seconds to stay alive after "ready">
 */
public class ManyClasses {
    static final List<Object> KEPT = new ArrayList<>();

    static final class Loader extends ClassLoader {
        Loader() { super(ManyClasses.class.getClassLoader()); }
        Class<?> define(String name, byte[] bytes) { return defineClass(name, bytes, 0, bytes.length); }
    }

    // A class file: public class <name> { }, major version 52, no members.
    static byte[] classFile(String name) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.io.DataOutputStream out = new java.io.DataOutputStream(bytes);
        try {
            out.writeInt(0xCAFEBABE);
            out.writeShort(0);
            out.writeShort(52);
            out.writeShort(5);  // constant pool: 4 entries
            out.writeByte(7); out.writeShort(2);   // #1 Class #2
            out.writeByte(1); out.writeUTF(name);  // #2 Utf8 name
            out.writeByte(7); out.writeShort(4);   // #3 Class #4
            out.writeByte(1); out.writeUTF("java/lang/Object");
            out.writeShort(0x21);  // public super
            out.writeShort(1);
            out.writeShort(3);
            out.writeShort(0);  // interfaces
            out.writeShort(0);  // fields
            out.writeShort(0);  // methods
            out.writeShort(0);  // attributes
        } catch (java.io.IOException impossible) {
            throw new AssertionError(impossible);
        }
        return bytes.toByteArray();
    }

    public static void main(String[] args) throws Exception {
        int classes = Integer.parseInt(args[0]);
        int seconds = Integer.parseInt(args[1]);
        Loader loader = new Loader();
        KEPT.add(loader);
        for (int i = 0; i < classes; i++) {
            String name = "gen/Generated" + i;
            Class<?> defined = loader.define(name.replace('/', '.'), classFile(name));
            KEPT.add(defined);
        }
        System.out.println("ready " + classes);
        Thread.sleep(seconds * 1000L);
    }
}
