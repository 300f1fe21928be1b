// Defines Greeter from its class file bytes through ClassLoader.defineClass with a null name
// (the VM reads the name from the bytes; an agent's ClassFileLoadHook sees a null name) and runs
// its main. Java 7 source (see Greeter.java).
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.lang.reflect.Method;

public class ClassDefiner extends ClassLoader {
    ClassDefiner() {
        super(ClassDefiner.class.getClassLoader());
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
        byte[] bytes = read(name.replace('.', '/') + ".class");
        if (bytes == null) throw new ClassNotFoundException(name);
        return defineClass(null, bytes, 0, bytes.length);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        // Greeter and its nested classes come from here, not from the parent.
        if (name.startsWith("Greeter")) {
            synchronized (getClassLoadingLock(name)) {
                Class<?> found = findLoadedClass(name);
                return found != null ? found : findClass(name);
            }
        }
        return super.loadClass(name, resolve);
    }

    static byte[] read(String resource) {
        try (InputStream in = ClassDefiner.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) return null;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buffer = new byte[4096];
            for (int n; (n = in.read(buffer)) > 0; ) out.write(buffer, 0, n);
            return out.toByteArray();
        } catch (java.io.IOException e) {
            return null;
        }
    }

    public static void main(String[] args) throws Exception {
        Class<?> greeter = new ClassDefiner().loadClass("Greeter");
        if (greeter.getClassLoader() == ClassDefiner.class.getClassLoader()) {
            throw new IllegalStateException("Greeter came from the application loader");
        }
        Method main = greeter.getMethod("main", String[].class);
        main.invoke(null, (Object) new String[0]);
    }
}
