// Java source-form names from JVM type signatures, as the text output, LOAD CLASS names and the
// SITES rows show them: "[B" -> "byte[]", "Ljava/lang/String;" -> "java.lang.String",
// "[[Ljava/lang/Object;" -> "java.lang.Object[][]".
#pragma once

#include <string>
#include <string_view>

namespace fasthprof {

// Appends the Java form of a JVM field signature to out: "L...;" loses its brackets and '/'
// becomes '.', each leading '[' becomes a trailing "[]", primitive letters become their names ('V'
// is "void"), a method descriptor becomes "()". '$' is kept. A hidden class's address takes
// HotSpot's '+' ("Lp/Foo$$Lambda.0x1f;" -> "p.Foo$$Lambda+0x1f"), as the JDK's heap dumper names it. A malformed or empty signature appends
// "Unknown_class", as the original agent did. May allocate; any thread.
void append_java_name(std::string& out, std::string_view signature);

// The Java form of signature (see append_java_name). Allocates.
std::string java_name(std::string_view signature);

}  // namespace fasthprof
