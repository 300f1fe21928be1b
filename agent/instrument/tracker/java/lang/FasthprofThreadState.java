/*
 * One thread's part of cpu=times (docs/cpu_times.md): its shadow stack and its traces, written by
 * the thread alone; FasthprofTracker.collect() reads the counters from the writer thread and keeps
 * what it has reported in rep* (which only it writes), so that no count is ever lost to a race.
 *
 * A "node" is one trace: the methods of the top `depth` frames. Calls go from node to node through
 * an edge table (node, callee) -> node, so a call costs one hash probe, and the number of nodes is
 * bounded by the distinct traces, not the distinct call paths (deep recursion makes a few nodes).
 * A node's frames take as many words as the trace is long, not `depth`: a large depth costs only
 * where stacks are that deep.
 */
package java.lang;

final class FasthprofThreadState {
    static final int EMPTY = -1;
    static final int UNKNOWN = -1;

    final Thread thread;
    final long tid;
    // A thread the tracker does not count: an agent thread, or one over the thread cap.
    final boolean off;

    // The position (original offset + 1) of the invoke the thread's top frame made last, written
    // by FasthprofTracker.at() before a call and given back to the caller at the callee's exit
    // (from stPos); 0: unknown (no position calls injected).
    int pos;
    // Shadow stack: node, method, start time and time spent in callees of every open call, and the
    // position its caller called it from (stPos, pos at its entry). Without cpu=times a call's node
    // is found only when an allocation needs it (UNKNOWN until then), from the nodes below it.
    int sp;
    int[] stNode;
    int[] stMethod;
    int[] stPos;
    long[] stStart;
    long[] stCallees;

    // Traces: node n's frames are frames[nodeAt[n]] .. frames[nodeAt[n] + nodeLength[n] - 1], top
    // first, and framePos the position each frame below the top called from (the top's is 0);
    // frameCount words of frames are used. nodeCount is published last (volatile), after the
    // arrays it covers.
    volatile int nodeCount;
    int[] nodeAt;
    int[] nodeLength;
    int[] frames;
    int[] framePos;
    int frameCount;
    // Bytes of the tracker's budget this thread's nodes hold (given back when its state goes).
    long budgetBytes;
    long[] calls;
    long[] self;
    long[] total;
    // What collect() has reported so far (the writer thread only).
    long[] repCalls;
    long[] repSelf;
    long[] repTotal;
    // The rows collect() found changed in its first pass, and their frames (the writer thread only).
    int pendingRows;
    int pendingFrames;

    // Edges (from node, position in it, callee method) -> node, open addressing; EMPTY marks a free slot.
    int[] edgeFrom;
    int[] edgeMethod;
    int[] edgePos;
    int[] edgeTo;
    int edgeCount;
    // Nodes by content, for an edge seen for the first time: open addressing over node indexes.
    int[] byContent;

    // Calls counted under the empty trace because the node budget was spent.
    long overflowCalls;
    // This thread's allocation counts by (node, site), with alloc=inject at depth > 1.
    FasthprofAllocs.State allocs;

    FasthprofThreadState(Thread thread, long tid, boolean off) {
        this.thread = thread;
        this.tid = tid;
        this.off = off;
        if (off) {
            return;
        }
        stNode = new int[32];
        stMethod = new int[32];
        stPos = new int[32];
        stStart = new long[32];
        stCallees = new long[32];
        int nodes = 16;
        nodeAt = new int[nodes];
        nodeLength = new int[nodes];
        frames = new int[64];
        framePos = new int[64];
        calls = new long[nodes];
        self = new long[nodes];
        total = new long[nodes];
        edgeFrom = new int[64];
        edgeMethod = new int[64];
        edgePos = new int[64];
        edgeTo = new int[64];
        for (int i = 0; i < 64; i++) {
            edgeFrom[i] = EMPTY;
        }
        byContent = new int[32];
        for (int i = 0; i < 32; i++) {
            byContent[i] = EMPTY;
        }
        // Node 0: the empty trace (depth=0, or no room for another node).
        nodeCount = 1;
    }
}
