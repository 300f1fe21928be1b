/*
 * The traces of cpu=times' shadow stack (FasthprofThreadState, docs/cpu_times.md): a call goes from
 * its caller's node to its own through the edge table (node, position, callee) -> node, so it costs
 * one probe; an edge seen for the first time finds or makes the node of its content (the top
 * `depth` methods, and below the top the position each frame calls from). Positions are 0 unless
 * allocation traces are kept (FasthprofTracker.at()), so cpu=times alone makes the same nodes as
 * without them. Only the state's own thread runs this.
 */
package java.lang;

final class FasthprofNodes {
    private FasthprofNodes() {}

    // Budget bytes a node costs besides its frames: its counters (reported ones too), its place in
    // the node, edge and content tables.
    private static final int NODE_BYTES = 96;

    private static int hash(int from, int pos, int method) {
        int h = from * 0x9E3779B1 + method * 0x85EBCA6B + pos * 0xC2B2AE35;
        return h ^ (h >>> 15);
    }

    // The node of a call of `method` made from node `from` at position `pos` (0: unknown).
    static int child(FasthprofThreadState s, int from, int pos, int method) {
        int[] ef = s.edgeFrom;
        int mask = ef.length - 1;
        int i = hash(from, pos, method) & mask;
        while (true) {
            int f = ef[i];
            if (f == from && s.edgeMethod[i] == method && s.edgePos[i] == pos) {
                return s.edgeTo[i];
            }
            if (f == FasthprofThreadState.EMPTY) {
                break;
            }
            i = (i + 1) & mask;
        }
        int to = nodeFor(s, from, pos, method);
        addEdge(s, from, pos, method, to);
        return to;
    }

    private static void addEdge(FasthprofThreadState s, int from, int pos, int method, int to) {
        if ((s.edgeCount + 1) * 2 > s.edgeFrom.length) {
            int[] of = s.edgeFrom;
            int[] om = s.edgeMethod;
            int[] op = s.edgePos;
            int[] ot = s.edgeTo;
            int size = of.length * 2;
            s.edgeFrom = new int[size];
            s.edgeMethod = new int[size];
            s.edgePos = new int[size];
            s.edgeTo = new int[size];
            for (int i = 0; i < size; i++) {
                s.edgeFrom[i] = FasthprofThreadState.EMPTY;
            }
            s.edgeCount = 0;
            for (int i = 0; i < of.length; i++) {
                if (of[i] != FasthprofThreadState.EMPTY) {
                    putEdge(s, of[i], op[i], om[i], ot[i]);
                }
            }
        }
        putEdge(s, from, pos, method, to);
    }

    private static void putEdge(FasthprofThreadState s, int from, int pos, int method, int to) {
        int mask = s.edgeFrom.length - 1;
        int i = hash(from, pos, method) & mask;
        while (s.edgeFrom[i] != FasthprofThreadState.EMPTY) {
            i = (i + 1) & mask;
        }
        s.edgeFrom[i] = from;
        s.edgeMethod[i] = method;
        s.edgePos[i] = pos;
        s.edgeTo[i] = to;
        s.edgeCount++;
    }

    // The node whose trace is `method` on top of the first depth-1 frames of node `from`, the
    // first of them (from's top) calling from `pos`.
    private static int nodeFor(FasthprofThreadState s, int from, int pos, int method) {
        int tailAt = s.nodeAt[from];
        int depth = FasthprofTracker.depth;
        int tailLength = s.nodeLength[from] < depth - 1 ? s.nodeLength[from] : depth - 1;
        int h = contentHash(method, s.frames, s.framePos, tailAt, tailLength, pos);
        int[] bc = s.byContent;
        int i = h & (bc.length - 1);
        while (bc[i] != FasthprofThreadState.EMPTY) {
            int n = bc[i];
            if (s.nodeLength[n] == tailLength + 1 && s.frames[s.nodeAt[n]] == method
                    && sameTail(s, s.nodeAt[n] + 1, tailAt, tailLength, pos)) {
                return n;
            }
            i = (i + 1) & (bc.length - 1);
        }
        if (!FasthprofTracker.charge(s, NODE_BYTES + 8L * (tailLength + 1))) {
            return 0;
        }
        int n = addNode(s, from, pos, method, tailLength);
        if ((n + 1) * 2 > bc.length) {
            rehash(s);
        } else {
            bc[i] = n;
        }
        s.nodeCount = n + 1;  // publishes the node (volatile)
        return n;
    }

    // Stores a node's frames and positions and makes room for its counters; the caller publishes it.
    private static int addNode(FasthprofThreadState s, int from, int pos, int method, int tailLength) {
        int n = s.nodeCount;
        if (n == s.calls.length) {
            int size = n * 2;
            s.nodeAt = FasthprofArrays.copy(s.nodeAt, size);
            s.nodeLength = FasthprofArrays.copy(s.nodeLength, size);
            s.calls = FasthprofArrays.copy(s.calls, size);
            s.self = FasthprofArrays.copy(s.self, size);
            s.total = FasthprofArrays.copy(s.total, size);
        }
        int at = s.frameCount;
        if (at + tailLength + 1 > s.frames.length) {
            int size = s.frames.length + (s.frames.length >> 1) + tailLength + 1;
            s.frames = FasthprofArrays.copy(s.frames, size);
            s.framePos = FasthprofArrays.copy(s.framePos, size);
        }
        int[] fr = s.frames;
        int[] fp = s.framePos;
        int tailAt = s.nodeAt[from];
        fr[at] = method;
        fp[at] = 0;
        System.arraycopy(fr, tailAt, fr, at + 1, tailLength);
        System.arraycopy(fp, tailAt, fp, at + 1, tailLength);
        if (tailLength > 0) {
            fp[at + 1] = pos;
        }
        s.nodeAt[n] = at;
        s.nodeLength[n] = tailLength + 1;
        s.frameCount = at + tailLength + 1;
        return n;
    }

    // Builds the content table twice as large, with every node up to nodeCount inclusive.
    private static void rehash(FasthprofThreadState s) {
        int nodes = s.nodeCount + 1;
        int[] fresh = new int[s.byContent.length * 2];
        for (int k = 0; k < fresh.length; k++) {
            fresh[k] = FasthprofThreadState.EMPTY;
        }
        int mask = fresh.length - 1;
        int[] fr = s.frames;
        int[] fp = s.framePos;
        for (int n = 1; n < nodes; n++) {
            int at = s.nodeAt[n];
            int length = s.nodeLength[n] - 1;
            int j = contentHash(fr[at], fr, fp, at + 1, length, length > 0 ? fp[at + 1] : 0) & mask;
            while (fresh[j] != FasthprofThreadState.EMPTY) {
                j = (j + 1) & mask;
            }
            fresh[j] = n;
        }
        s.byContent = fresh;
    }

    // A trace's hash: its top method, then each frame below with the position it calls from (the
    // first of them `firstPos`, the others as stored).
    private static int contentHash(int method, int[] fr, int[] fp, int at, int length, int firstPos) {
        int h = method;
        for (int k = 0; k < length; k++) {
            h = h * 31 + fr[at + k];
            h = h * 31 + (k == 0 ? firstPos : fp[at + k]);
        }
        return h ^ (h >>> 16);
    }

    // Whether the n frames at a (a stored node's, below its top) are those at b with the first
    // calling from `pos`.
    private static boolean sameTail(FasthprofThreadState s, int a, int b, int n, int pos) {
        int[] fr = s.frames;
        int[] fp = s.framePos;
        for (int k = 0; k < n; k++) {
            if (fr[a + k] != fr[b + k] || fp[a + k] != (k == 0 ? pos : fp[b + k])) {
                return false;
            }
        }
        return true;
    }
}
