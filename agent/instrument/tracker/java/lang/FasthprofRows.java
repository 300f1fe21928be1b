/*
 * FasthprofTracker.collect()'s result being filled: the rows of the nodes whose calls changed, their
 * frames, and the threads they belong to.
 */
package java.lang;

final class FasthprofRows {
    final int[] frames;
    final long[] values;
    final int[] rowThread;
    final int[] rowLength;
    final Thread[] threads;
    int row;
    int words;
    int thread;
    long overflow;
    long nodes;

    FasthprofRows(int rows, int words, int states) {
        frames = new int[words];
        values = new long[rows * 3];
        rowThread = new int[rows];
        rowLength = new int[rows];
        threads = new Thread[states];
    }
}
