// Compiled (syntax only) by the layout tests with the include paths one library's sources get:
// a header of a library it links must be found, a header of a layer it may not use must not.
#include GRADWIRE_CHECKED_HEADER
