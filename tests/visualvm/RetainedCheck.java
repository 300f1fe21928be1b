import java.io.File;
import java.util.List;

import org.graalvm.visualvm.lib.jfluid.heap.Heap;
import org.graalvm.visualvm.lib.jfluid.heap.HeapFactory;
import org.graalvm.visualvm.lib.jfluid.heap.Instance;
import org.graalvm.visualvm.lib.jfluid.heap.JavaClass;

/**
 * Retained sizes as VisualVM's heap library computes them, for comparing with `fasthprof
 * dominators` (tests/integration/heap_analysis.py).
 *
 *   RetainedCheck FILE DUMP TOP [ID...]
 *
 * prints the TOP objects of dump DUMP (0 = the first) by retained size, one line each:
 *   object ID RETAINED SHALLOW CLASS
 * then every class whose retained size (JavaClass.getRetainedSizeByClass) is not 0:
 *   class RETAINED COUNT CLASS
 * then for each ID asked for (decimal), that object as a top one is printed, "id" for "object".
 */
public class RetainedCheck {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: RetainedCheck FILE DUMP TOP [ID...]");
            System.exit(2);
        }
        Heap heap = HeapFactory.createHeap(new File(args[0]), Integer.parseInt(args[1]));
        List<Instance> top = heap.getBiggestObjectsByRetainedSize(Integer.parseInt(args[2]));
        for (Instance instance : top) {
            JavaClass c = instance.getJavaClass();
            System.out.println("object " + instance.getInstanceId() + " " + instance.getRetainedSize() + " "
                    + instance.getSize() + " " + (c == null ? "?" : c.getName()));
        }
        for (JavaClass c : heap.getAllClasses()) {
            long retained = c.getRetainedSizeByClass();
            if (retained != 0) System.out.println("class " + retained + " " + c.getInstancesCount() + " " + c.getName());
        }
        for (int i = 3; i < args.length; i++) {
            Instance instance = heap.getInstanceByID(Long.parseLong(args[i]));
            if (instance == null) {
                System.out.println("id " + args[i] + " none");
                continue;
            }
            JavaClass c = instance.getJavaClass();
            System.out.println("id " + instance.getInstanceId() + " " + instance.getRetainedSize() + " "
                    + instance.getSize() + " " + (c == null ? "?" : c.getName()));
        }
    }
}
