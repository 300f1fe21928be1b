import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;

/**
 * A heap of known shape for `fasthprof summary`'s class histogram: counts of its own classes and
 * arrays that no other code allocates, held live, then "ready" on stdout, and nothing allocated
 * until a line (or the end) on stdin, so that jcmd GC.class_histogram and the heap dumps taken
 * meanwhile see the same heap. Usage: Histogram scale [now] (now: exit at once, the heap still held).
 */
public class Histogram {
    static final class Point {
        final long x;
        final long y;
        Point(long x, long y) { this.x = x; this.y = y; }
    }

    static final class Node {
        Node next;
        Point point;
        int weight;
    }

    static class Shape {
        int sides;
    }

    static final class Square extends Shape {
        double side;
    }

    static Object[] live;

    public static void main(String[] args) throws Exception {
        int scale = Integer.parseInt(args[0]);
        List<Object> held = new ArrayList<>();
        Node head = null;
        for (int i = 0; i < 3 * scale; i++) {
            Node node = new Node();
            node.next = head;
            node.weight = i;
            if (i % 3 == 0) node.point = new Point(i, -i);
            head = node;
        }
        held.add(head);
        for (int i = 0; i < 2 * scale; i++) held.add(i % 2 == 0 ? new Shape() : new Square());
        Point[][] grid = new Point[scale / 10][];
        for (int i = 0; i < grid.length; i++) grid[i] = new Point[i + 1];
        held.add(grid);
        for (int i = 0; i < 7; i++) held.add(new Square[i * 5]);
        live = held.toArray();
        System.out.println("ready");
        System.out.flush();
        if (args.length < 2 || !args[1].equals("now")) new BufferedReader(new InputStreamReader(System.in)).readLine();
        System.out.println("finished " + live.length);
    }
}
