/*
 * The tracker of cpu=times and cpu=old (docs/cpu_times.md). fasthprof's class-file rewriter makes
 * every instrumented method call enter(id) first and exit(id) before each return; this class counts
 * those calls per thread, in Java, so that a call never crosses JNI or JVMTI. The agent's writer
 * thread takes the counts in bulk through collect().
 *
 * The agent defines this class with the boot loader, so it lives in java.base (java.lang is read by
 * every module). Its dependencies are kept to natives and intrinsics (Thread.currentThread,
 * System.arraycopy, jdk.internal.misc.Unsafe, which the agent never instruments), so no call made
 * here reaches instrumented code: a re-entry would otherwise count the tracker's own work, or
 * recurse. Allocations of the state of a new thread run Object.<init>, which is not instrumented
 * either; `creating` guards that path in case it ever were.
 *
 * Time: a coarse clock. A thread of the agent (a plain pthread) writes CLOCK_MONOTONIC nanoseconds
 * into off-heap memory every tick; reading it is one load. Differences are exact to within one tick
 * and unbiased while the ticker runs. When every core is busy the ticker may be held off for tens of
 * milliseconds, and a call ending then would lose its time to the next call that spans a tick. So an
 * exit whose call spanned a tick (the word moved since its entry, rare for short calls) also reads
 * System.nanoTime(), the same clock: when the word lags it by more than STALE_NS, every thread reads
 * nanoTime() itself (`precise`) until one finds the word fresh again.
 *
 * Allocation traces (alloc=inject at depth > 1, docs/allocation-sites.md): the same shadow stack,
 * with at(p) injected before every invoke so that a node also knows from which instruction each
 * frame below its top called; alloc/allocArray then count by (the top node, the site) in
 * FasthprofAllocs. Without cpu=times (`timing` false) no clock is read and nothing is timed: the
 * stack is only pushed and popped.
 *
 * Memory: the traces of all threads share a budget of bytes (an estimate per node, plus eight bytes a
 * frame); a trace beyond it is counted under the empty trace. An OutOfMemoryError met while
 * counting stops the tracker for good (a retry on every call would keep the heap full): the agent
 * sees the word it sets, says so once, takes the counts made so far and lets the states go.
 */
package java.lang;

import jdk.internal.misc.Unsafe;
import jdk.internal.vm.annotation.DontInline;

public final class FasthprofTracker {
    private FasthprofTracker() {}

    private static final Unsafe U = Unsafe.getUnsafe();
    private static final long TID_OFFSET = U.objectFieldOffset(Thread.class, "tid");
    // Not a monitor: on JDK 24+ a virtual thread blocked on a monitor unmounts, and the JDK's
    // VirtualThread-unblocker thread, which must schedule it again once it is handed the monitor,
    // itself runs counted code whose first call here needs this lock (seen: a deadlock with 500
    // virtual threads). A spin lock keeps waiters mounted; no section under it blocks.
    private static final FasthprofLock LOCK = new FasthprofLock();

    // Off-heap words the agent owns (start()): the clock at +0, the budget bytes used at +64, at +72
    // the number of thread states (the agent collects early when it grows, so that the states of
    // ended threads go before the cap is reached), at +80 1 once the budget was reached, at +84 1
    // once an OutOfMemoryError stopped the tracker.
    private static long clock;
    private static long budget;
    private static long statesWord;
    private static long budgetReachedWord;
    private static long gaveUpWord;
    static int depth;
    private static long maxBytes;
    private static int maxThreads;
    private static volatile boolean engaged;
    // cpu=times: calls are timed and counted. allocTraces: allocations are counted by node.
    private static boolean timing;
    private static boolean allocTraces;
    // Allocation traces by frame walk instead (no shadow stack): set by startAllocWalk().
    private static boolean allocWalk;

    // Thread states by thread ID, open addressing; replaced whole when it grows or loses states,
    // so that a reader without the lock always sees a consistent array.
    private static volatile FasthprofThreadState[] table = new FasthprofThreadState[256];
    private static int liveStates;
    private static Thread creating;
    private static int untrackedThreads;

    // ---- the agent's calls (JNI) ------------------------------------------------------------

    /** Starts counting. clockAddress: the ticker's word, followed by the agent's words (above). */
    static void start(long clockAddress, int traceDepth, long byteBudget, int threadCap) {
        words(clockAddress, byteBudget, threadCap);
        depth = allocTraces && depth > traceDepth ? depth : traceDepth;
        timing = true;
        engaged = true;
    }

    /** Keeps the shadow stack for allocation traces of traceDepth frames (alloc=inject); `words` as start()'s. */
    static void startAllocTraces(long words, int traceDepth, long byteBudget, int threadCap) {
        if (!timing) {
            words(words, byteBudget, threadCap);
        }
        depth = depth > traceDepth ? depth : traceDepth;
        allocTraces = true;
        engaged = true;
    }

    /** Allocation traces by frame walk (alloc=inject at depth > 1 without cpu=times, agent/sites/frame_walk.h). */
    static void startAllocWalk() {
        allocWalk = true;
    }

    private static void words(long clockAddress, long byteBudget, int threadCap) {
        clock = clockAddress;
        budget = clockAddress + 64;
        statesWord = clockAddress + 72;
        budgetReachedWord = clockAddress + 80;
        gaveUpWord = clockAddress + 84;
        maxBytes = byteBudget;
        maxThreads = threadCap;
    }

    /** Forgets every thread state (after an OutOfMemoryError stopped the tracker and collect() took its counts). */
    static void release() {
        LOCK.lock();
        try {
            table = new FasthprofThreadState[256];
            liveStates = 0;
            U.putLongVolatile(null, budget, 0);
            U.putIntVolatile(null, statesWord, 0);
        } finally {
            LOCK.unlock();
        }
    }

    /** Forgets the states of these threads, which ended (allocation traces without cpu=times, whose collect() drops them). */
    static void forget(Thread[] ended) {
        LOCK.lock();
        try {
            drop(ended);
        } finally {
            LOCK.unlock();
        }
    }

    /** Stops counting (VM death): calls from here on are not counted. */
    static void stop() {
        engaged = false;
    }

    /** The current thread is the agent's: its calls are not counted. */
    static void ignoreCurrentThread() {
        Thread t = Thread.currentThread();
        LOCK.lock();
        try {
            long tid = U.getLong(t, TID_OFFSET);
            if (find(table, tid) == null) {
                insert(new FasthprofThreadState(t, tid, true));
            }
        } finally {
            LOCK.unlock();
        }
    }

    /**
     * Exit by exception: the current thread caught one in method id (JVMTI ExceptionCatch), so every
     * open call above the catching activation of id has ended. Which activation catches matters in
     * a recursion, where the exception may have left activations of id above it: `live` is then the
     * number of activations of id on the thread's real stack (the catching one is the topmost of
     * them), counted by the agent; those are the lowest `live` of the shadow stack, and the others
     * have ended. With live = 0 (not counted) and at most one activation of id on the shadow stack,
     * the calls above it are closed; with more, nothing changes and their number is returned, for
     * the agent to count the live ones and call again. Returns 0 when done.
     */
    static int caught(int id, int live) {
        Thread t = Thread.currentThread();
        FasthprofThreadState s = find(table, U.getLong(t, TID_OFFSET));
        if (s == null || s.off) {
            return 0;
        }
        int[] methods = s.stMethod;
        int sp = s.sp;
        int at = -1;
        if (live <= 0) {
            int found = 0;
            for (int i = sp - 1; i >= 0; i--) {
                if (methods[i] == id) {
                    if (at < 0) {
                        at = i;
                    }
                    found++;
                }
            }
            if (found > 1) {
                return found;
            }
        } else {
            // The live-th activation from the bottom. Fewer on the shadow stack than live: some
            // began before the agent came (under attach) and are not on it; then the topmost is
            // taken, as without a count.
            for (int i = 0, seen = 0; i < sp; i++) {
                if (methods[i] == id) {
                    at = i;
                    if (++seen == live) {
                        break;
                    }
                }
            }
        }
        if (at >= 0 && at + 1 < sp) {
            // The catching frame goes on from its position when it made the call that threw.
            s.pos = s.stPos[at + 1];
        }
        if (at >= 0 && !timing) {
            s.sp = at + 1;
        } else if (at >= 0) {
            known(s);
            long now = exitTime(s.stStart[sp - 1]);
            for (int j = sp - 1; j > at; j--) {
                pop(s, j, now);
            }
        }
        return 0;
    }

    /**
     * The counts since the last collect(), of every thread. The states of the threads in `ended`
     * (found dead by the agent since the last call) are reported one last time and dropped.
     * Returns {int[] frames (of every row in turn, top first), long[] values (calls, self ns, total
     * ns per row), int[] rowThread (index into threads), Thread[] threads, long[] figures
     * (untracked threads, overflow calls, live states, nodes), int[] rowLength (frames per row)}.
     * A row that grew between the two passes below is left for the next call.
     */
    static Object[] collect(Thread[] ended) {
        LOCK.lock();
        try {
            FasthprofThreadState[] tab = table;
            int rows = 0;
            int words = 0;
            int states = 0;
            for (FasthprofThreadState s : tab) {
                if (s != null) {
                    states++;
                    if (!s.off) {
                        rows += changedRows(s);
                        words += s.pendingFrames;
                    }
                }
            }
            FasthprofRows out = new FasthprofRows(rows, words, states);
            for (FasthprofThreadState s : tab) {
                if (s != null) {
                    out.threads[out.thread++] = s.thread;
                    if (!s.off) {
                        take(s, out);
                    }
                }
            }
            if (ended != null && ended.length > 0) {
                drop(ended);
            }
            long[] figures = {untrackedThreads, out.overflow, liveStates, out.nodes};
            return new Object[] {FasthprofArrays.copy(out.frames, out.words), FasthprofArrays.copy(out.values, out.row * 3),
                                 FasthprofArrays.copy(out.rowThread, out.row), out.threads, figures,
                                 FasthprofArrays.copy(out.rowLength, out.row)};
        } finally {
            LOCK.unlock();
        }
    }


    // The nodes of s published so far, as far as every array read covers them (volatile read first).
    private static int published(FasthprofThreadState s, long[] c, long[] sf, long[] tt, int[] at, int[] length) {
        int n = s.nodeCount;
        n = min(n, c.length, sf.length, tt.length);
        return min(n, at.length, length.length, length.length);
    }

    // Under LOCK: how many nodes of s have calls not yet reported (their frames in s.pendingFrames).
    private static int changedRows(FasthprofThreadState s) {
        long[] c = s.calls;
        int[] length = s.nodeLength;
        int n = published(s, c, s.self, s.total, s.nodeAt, length);
        if (s.repCalls == null || s.repCalls.length < n) {
            s.repCalls = grow(s.repCalls, n);
            s.repSelf = grow(s.repSelf, n);
            s.repTotal = grow(s.repTotal, n);
        }
        int rows = 0;
        int words = 0;
        for (int i = 0; i < n; i++) {
            if (c[i] != s.repCalls[i]) {
                rows++;
                words += length[i];
            }
        }
        s.pendingRows = rows;
        s.pendingFrames = words;
        return rows;
    }

    // Under LOCK: the rows of s into out, within the room changedRows() counted for s (a row that
    // changed since is left for the next call; an ended thread's rows cannot change, so all fit).
    private static void take(FasthprofThreadState s, FasthprofRows out) {
        long[] c = s.calls;
        long[] sf = s.self;
        long[] tt = s.total;
        int[] at = s.nodeAt;
        int[] length = s.nodeLength;
        int n = published(s, c, sf, tt, at, length);
        int[] fr = s.frames;
        n = n < s.repCalls.length ? n : s.repCalls.length;
        out.nodes += n;
        out.overflow += s.overflowCalls;
        int rows = s.pendingRows;
        int words = s.pendingFrames;
        for (int i = 0; i < n && rows > 0; i++) {
            long dc = c[i] - s.repCalls[i];
            int len = length[i];
            if (dc == 0 || at[i] + len > fr.length || len > words) {
                continue;
            }
            rows--;
            words -= len;
            long ds = sf[i] - s.repSelf[i];
            long dt = tt[i] - s.repTotal[i];
            s.repCalls[i] += dc;
            s.repSelf[i] += ds;
            s.repTotal[i] += dt;
            System.arraycopy(fr, at[i], out.frames, out.words, len);
            out.words += len;
            int row = out.row++;
            out.values[row * 3] = dc;
            out.values[row * 3 + 1] = ds;
            out.values[row * 3 + 2] = dt;
            out.rowThread[row] = out.thread - 1;
            out.rowLength[row] = len;
        }
    }

    // ---- the injected calls -----------------------------------------------------------------

    // The allocation counts are real calls (as enter()): inlined, their thread-state lookup and
    // counting would be compiled again into every method that allocates (javac and H2 at depth 1:
    // about 4 % more CPU, bench/README.md). With traces by frame walk (allocWalk) each one asks
    // FasthprofAllocs.callers() itself: the native's caller is the frame above the allocating one.

    /** Before `new`: heap=sites counted by injection (FasthprofAllocs). */
    @DontInline
    public static void alloc(int site) {
        if (allocWalk) {
            FasthprofAllocs.countWalked(FasthprofAllocs.callers(), site);
        } else if (allocTraces) {
            FasthprofAllocs.countTraced(traceState(), site);
        } else {
            FasthprofAllocs.count(site);
        }
    }

    /** Before an array allocation (newarray, anewarray, multianewarray of 1 dimension): its length and the site. */
    @DontInline
    public static void allocArray(int length, int site) {
        if (allocWalk) {
            FasthprofAllocs.countArrayWalked(FasthprofAllocs.callers(), length, site);
        } else if (allocTraces) {
            FasthprofAllocs.countArrayTraced(traceState(), length, site);
        } else {
            FasthprofAllocs.countArray(length, site);
        }
    }

    /** Before a multianewarray of 2+ dimensions: its counts (not counted) and its innermost level's site. */
    @DontInline
    public static void allocMulti(int[] lengths, int site) {
        if (allocWalk) {
            FasthprofAllocs.countMultiWalked(FasthprofAllocs.callers(), lengths, site);
        } else if (allocTraces) {
            FasthprofAllocs.countMultiTraced(traceState(), lengths, site);
        } else {
            FasthprofAllocs.countMulti(lengths, site);
        }
    }

    /** Before Unsafe.allocateInstance(c) at the call site `call`: an instance of c (FasthprofAllocs.classSite). */
    @DontInline
    public static void allocClass(Class<?> c, int call) {
        int site = FasthprofAllocs.classSite(c, call);
        if (site >= 0 && allocWalk) {
            FasthprofAllocs.countWalked(FasthprofAllocs.callers(), site);
        } else if (site >= 0) {
            alloc(site);
        }
    }

    /**
     * Before a call sure to reach Object.clone (an array's clone(), a direct subclass's super.clone())
     * at the call site `call`: an object like o, counted here, where its VMObjectAlloc event would
     * cost a stack walk (FasthprofAllocs.cloneCallers marks the event left out).
     */
    @DontInline
    public static void allocClone(Object o, int call) {
        // null or not Cloneable: the call throws, nothing is made (arrays are Cloneable)
        int site = o instanceof Cloneable ? FasthprofAllocs.classSite(o.getClass(), call) : -1;
        if (site >= 0) {
            FasthprofAllocs.countCloneWalked(FasthprofAllocs.cloneCallers(), o, site);
        }
    }

    // After an allocation, once the object is usable (after its constructor for `new`): its site
    // into its header (FasthprofMarks); by frame walk the counting call's context (same frames).
    @DontInline
    public static void marked(Object o, int site) {
        FasthprofMarks.mark(o, allocWalk ? FasthprofAllocs.callers() : 0, site);
    }

    @DontInline
    public static void markedMulti(Object o, int dims, int site) {
        FasthprofMarks.markMulti(o, allocWalk ? FasthprofAllocs.callers() : 0, dims, site);
    }

    /** After Unsafe.allocateInstance, and (markedClone) a sure Object.clone call, at call site `call`. */
    @DontInline
    public static void markedClass(Object o, int call) {
        FasthprofMarks.markByClass(o, allocWalk ? FasthprofAllocs.callers() : 0, call);
    }

    @DontInline
    public static void markedClone(Object o, int call) {
        FasthprofMarks.markByClass(o, allocWalk ? FasthprofAllocs.callers() : 0, call);
    }

    // enter, exit and at are @DontInline (honoured in a boot class): compiled once each, called by
    // every instrumented method. Inlined, C2 compiled them again at every call, return and position
    // call (bench/README.md "Where javac's extra cost at depth 4 goes").

    /** Before an invoke at original offset `pos` (a short): where the calling frame is. */
    @DontInline
    public static void at(int pos) {
        if (!engaged) {
            return;
        }
        try {
            FasthprofThreadState s = state();
            if (s != null) {
                s.pos = (pos & 0xffff) + 1;
            }
        } catch (Throwable e) {
            failed(e);
        }
    }

    // The state whose top node an allocation is counted under, null when none (not engaged).
    private static FasthprofThreadState traceState() {
        if (!engaged) {
            return null;
        }
        try {
            FasthprofThreadState s = state();
            if (s != null && !s.off && s.sp > 0) {
                known(s);
            }
            return s;
        } catch (Throwable e) {
            failed(e);
            return null;
        }
    }

    // Finds the nodes still UNKNOWN on s's stack (sp > 0): those of the calls entered without
    // cpu=times, at an allocation, or with cpu=times before it times them (started after the traces).
    private static void known(FasthprofThreadState s) {
        if (s.stNode[s.sp - 1] == FasthprofThreadState.UNKNOWN) {
            resolve(s);
        }
    }

    // Finds the nodes of the calls entered since the topmost one whose node is known (allocation
    // traces without cpu=times): the edges push() would have followed, in the same order.
    private static void resolve(FasthprofThreadState s) {
        int[] nodes = s.stNode;
        int top = s.sp - 1;
        int i = top;
        while (i > 0 && nodes[i - 1] == FasthprofThreadState.UNKNOWN) {
            i--;
        }
        for (; i <= top; i++) {
            int node = depth == 0 ? 0 : FasthprofNodes.child(s, i > 0 ? nodes[i - 1] : 0, i > 0 ? s.stPos[i] : 0, s.stMethod[i]);
            nodes[i] = node;
        }
    }

    @DontInline
    public static void enter(int id) {
        if (!engaged) {
            return;
        }
        try {
            push(id);
        } catch (Throwable e) {
            // Never into the program: a StackOverflowError here costs this call its count, and the
            // program meets the error where it would have anyway.
            failed(e);
        }
    }

    @DontInline
    public static void exit(int id) {
        if (!engaged) {
            return;
        }
        try {
            popTo(id);
        } catch (Throwable e) {
            // As in enter().
            failed(e);
        }
    }

    private static void push(int id) {
        FasthprofThreadState s = state();
        if (s == null || s.off) {
            return;
        }
        int sp = s.sp;
        if (sp == s.stNode.length) {
            growStack(s);
        }
        s.stMethod[sp] = id;
        s.stPos[sp] = s.pos;
        if (!timing) {
            // The node waits for an allocation (resolve()): no edge probe on every call.
            s.stNode[sp] = FasthprofThreadState.UNKNOWN;
            s.sp = sp + 1;
            return;
        }
        int parent = 0;
        int pos = 0;
        if (sp > 0) {
            known(s);
            parent = s.stNode[sp - 1];
            pos = s.pos;
        }
        s.stNode[sp] = depth == 0 ? 0 : FasthprofNodes.child(s, parent, pos, id);
        s.stStart[sp] = enterTime();
        s.stCallees[sp] = 0;
        s.sp = sp + 1;
    }

    private static void popTo(int id) {
        FasthprofThreadState s = state();
        if (s == null || s.off) {
            return;
        }
        int top = s.sp - 1;
        if (top < 0) {
            return;  // a call that began before the agent came
        }
        if (!timing) {
            unwind(s, top, id);
            return;
        }
        known(s);
        long now = exitTime(s.stStart[top]);
        if (s.stMethod[top] != id) {
            // The frames above this call's ended by an exception that no ExceptionCatch reported
            // (caught by code that is not instrumented); or this call began before the agent came
            // and is not on the stack at all, and then nothing is popped.
            int i = top - 1;
            while (i >= 0 && s.stMethod[i] != id) {
                i--;
            }
            if (i < 0) {
                return;
            }
            for (; top > i; top--) {
                pop(s, top, now);
            }
        }
        pop(s, top, now);
        s.pos = s.stPos[top];
    }

    // popTo() without times: the stack down to below the topmost call of id (none found: nothing).
    private static void unwind(FasthprofThreadState s, int top, int id) {
        int[] methods = s.stMethod;
        while (top >= 0 && methods[top] != id) {
            top--;
        }
        if (top >= 0) {
            s.pos = s.stPos[top];
            s.sp = top;
        }
    }

    // ---- inside -----------------------------------------------------------------------------

    // How far the ticker's word may lag the clock before readers stop trusting it: three ticks.
    // Each call pays two nanoTime() reads (about 70 ns here) while they do; 10 ms cost less on a
    // loaded machine but let a call that began within it lose its whole time (docs/cpu_times.md).
    private static final long STALE_NS = 3_000_000L;
    private static volatile boolean precise;

    private static long enterTime() {
        long word = U.getLong(clock);
        return precise ? checked(word) : word;
    }

    // The time at the exit of a call that began at `start`.
    private static long exitTime(long start) {
        long word = U.getLong(clock);
        return precise || word != start ? checked(word) : word;
    }

    // The real clock when the word lags it by more than STALE_NS, else the word; switches `precise`.
    private static long checked(long word) {
        long real = System.nanoTime();
        boolean stale = real - word > STALE_NS;
        if (stale != precise) {
            precise = stale;
        }
        return stale ? real : word;
    }

    private static void failed(Throwable e) {
        if (e instanceof OutOfMemoryError) {
            engaged = false;
            U.putIntVolatile(null, gaveUpWord, 1);
        }
    }

    private static void pop(FasthprofThreadState s, int i, long now) {
        long elapsed = now - s.stStart[i];
        if (elapsed < 0) {
            elapsed = 0;
        }
        long own = elapsed - s.stCallees[i];
        if (own < 0) {
            own = 0;
        }
        int node = s.stNode[i];
        s.calls[node]++;
        s.self[node] += own;
        s.total[node] += elapsed;
        if (i > 0) {
            s.stCallees[i - 1] += elapsed;
        }
        s.sp = i;
    }

    private static FasthprofThreadState state() {
        Thread t = Thread.currentThread();
        long tid = U.getLong(t, TID_OFFSET);
        FasthprofThreadState[] tab = table;
        FasthprofThreadState s = tab[(int) tid & (tab.length - 1)];
        if (s != null && s.tid == tid) {
            return s;
        }
        return slowState(t, tid);
    }

    private static FasthprofThreadState slowState(Thread t, long tid) {
        if (tid == 0) {
            // A Thread object still being constructed: the JVM runs the constructor on the thread
            // it attaches (JNI AttachCurrentThread), before the thread has its ID. Not counted.
            return null;
        }
        FasthprofThreadState s = find(table, tid);
        if (s != null || creating == t) {
            return s;  // creating: this thread, re-entering while it makes its state (the lock is not reentrant)
        }
        LOCK.lock();
        try {
            s = find(table, tid);
            if (s != null) {
                return s;
            }
            creating = t;
            boolean off = liveStates >= maxThreads;
            if (off) {
                untrackedThreads++;
            }
            s = new FasthprofThreadState(t, tid, off);
            insert(s);
            creating = null;
            return s;
        } finally {
            LOCK.unlock();
        }
    }

    private static FasthprofThreadState find(FasthprofThreadState[] tab, long tid) {
        int mask = tab.length - 1;
        for (int i = (int) tid & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
            FasthprofThreadState s = tab[i];
            if (s == null) {
                return null;
            }
            if (s.tid == tid) {
                return s;
            }
        }
        return null;
    }

    // Under LOCK.
    private static void insert(FasthprofThreadState s) {
        FasthprofThreadState[] tab = table;
        int count = 1;
        for (FasthprofThreadState x : tab) {
            if (x != null) {
                count++;
            }
        }
        if (count * 2 > tab.length) {
            tab = rebuild(tab, tab.length * 2, null);
        } else {
            FasthprofThreadState[] copied = new FasthprofThreadState[tab.length];
            System.arraycopy(tab, 0, copied, 0, tab.length);
            tab = copied;
        }
        place(tab, s);
        if (!s.off) {
            liveStates++;
        }
        table = tab;
        U.putIntVolatile(null, statesWord, liveStates);
    }

    // Under LOCK: forgets the states of these threads (they ended).
    private static void drop(Thread[] ended) {
        FasthprofThreadState[] tab = table;
        int size = tab.length;
        while (size > 256 && liveStates * 8 < size) {
            size /= 2;
        }
        table = rebuild(tab, size, ended);
        U.putIntVolatile(null, statesWord, liveStates);
    }

    private static FasthprofThreadState[] rebuild(FasthprofThreadState[] tab, int size, Thread[] ended) {
        FasthprofThreadState[] fresh = new FasthprofThreadState[size];
        for (FasthprofThreadState s : tab) {
            if (s == null) {
                continue;
            }
            if (ended != null && contains(ended, s.thread)) {
                if (!s.off) {
                    liveStates--;
                    U.getAndAddLong(null, budget, -s.budgetBytes);
                }
                continue;
            }
            place(fresh, s);
        }
        return fresh;
    }

    private static boolean contains(Thread[] threads, Thread t) {
        for (Thread x : threads) {
            if (x == t) {
                return true;
            }
        }
        return false;
    }

    private static void place(FasthprofThreadState[] tab, FasthprofThreadState s) {
        int mask = tab.length - 1;
        int i = (int) s.tid & mask;
        while (tab[i] != null) {
            i = (i + 1) & mask;
        }
        tab[i] = s;
    }

    // A node costs `cost` bytes of the budget: false (and the budget said reached) when it is spent.
    static boolean charge(FasthprofThreadState s, long cost) {
        if (U.getAndAddLong(null, budget, cost) + cost > maxBytes) {
            U.getAndAddLong(null, budget, -cost);
            s.overflowCalls++;
            if (U.getIntVolatile(null, budgetReachedWord) == 0) {
                U.putIntVolatile(null, budgetReachedWord, 1);
            }
            return false;
        }
        s.budgetBytes += cost;
        return true;
    }

    private static void growStack(FasthprofThreadState s) {
        int size = s.stNode.length * 2;
        s.stNode = FasthprofArrays.copy(s.stNode, size);
        s.stMethod = FasthprofArrays.copy(s.stMethod, size);
        s.stPos = FasthprofArrays.copy(s.stPos, size);
        s.stStart = FasthprofArrays.copy(s.stStart, size);
        s.stCallees = FasthprofArrays.copy(s.stCallees, size);
    }

    private static long[] grow(long[] a, int n) {
        int size = 16;
        while (size < n) {
            size *= 2;
        }
        return a == null ? new long[size] : FasthprofArrays.copy(a, size);
    }

    private static int min(int a, int b, int c, int d) {
        int m = a < b ? a : b;
        m = m < c ? m : c;
        return m < d ? m : d;
    }
}
