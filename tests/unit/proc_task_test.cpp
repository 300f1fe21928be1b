#include "base/proc_task.h"

#include <gtest/gtest.h>

#include <string>

namespace fasthprof {
namespace {

TEST(TaskStatState, ReadsTheLetterAfterTheName) {
  EXPECT_EQ('R', task_stat_state("1234 (java) R 1 1234 1234 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 22 0"));
  EXPECT_EQ('S', task_stat_state("1235 (C2 CompilerThre) S 1 1234 1234 0 -1"));
  EXPECT_EQ('D', task_stat_state("7 (kworker/0:1) D 2 0 0"));
}

TEST(TaskStatState, NameWithSpacesAndParentheses) {
  // A thread may name itself anything: the state is after the LAST ") ".
  EXPECT_EQ('R', task_stat_state("42 (a) S (b) c) R 1 2 3"));
  EXPECT_EQ('S', task_stat_state("42 () R ) S 1"));
  EXPECT_EQ('t', task_stat_state("42 (x)) t 1"));
}

TEST(TaskStatState, NoStateWhereTheKernelPutsIt) {
  EXPECT_EQ('\0', task_stat_state(""));
  EXPECT_EQ('\0', task_stat_state("42 (java"));        // cut inside the name
  EXPECT_EQ('\0', task_stat_state("42 (java)"));       // cut after it
  EXPECT_EQ('\0', task_stat_state("42 (java) "));      // cut before the state
  EXPECT_EQ('\0', task_stat_state("42 (java)R 1"));    // no space
  EXPECT_EQ('\0', task_stat_state("42 (java) 5 1"));   // not a letter
  EXPECT_EQ('\0', task_stat_state("42 java R 1"));     // no name at all
}

TEST(TaskStatState, ReadsOnlyTheGivenBytes) {
  std::string text = "42 (java) R 1";
  // A view that ends right before the state must not see it.
  EXPECT_EQ('\0', task_stat_state(std::string_view(text).substr(0, 10)));
  EXPECT_EQ('R', task_stat_state(std::string_view(text).substr(0, 11)));
}

TEST(ConcurrentCollectorThread, KnowsZgcAndShenandoahThreads) {
  EXPECT_TRUE(is_concurrent_collector_thread("ZDriver\n"));
  EXPECT_TRUE(is_concurrent_collector_thread("ZDirector"));
  EXPECT_TRUE(is_concurrent_collector_thread("Shenandoah Contr\n"));
  EXPECT_FALSE(is_concurrent_collector_thread("GC Thread#0\n"));
  EXPECT_FALSE(is_concurrent_collector_thread("main"));
  EXPECT_FALSE(is_concurrent_collector_thread(""));
  EXPECT_FALSE(is_concurrent_collector_thread("ZDrive"));
}

}  // namespace
}  // namespace fasthprof
