// Package pickle is a small pickle virtual machine for the opcode subset
// that plain data uses (protocols 2 to 5): dicts, lists, tuples, str and
// bytes, int of any width, float, bool and None, with the memo. It mirrors
// the opcodes of Python's Lib/pickle.py (the _Unpickler's load_* methods)
// as Lib/pickletools.py documents them, and never resolves globals:
// GLOBAL, STACK_GLOBAL, REDUCE, BUILD, NEWOBJ and friends are errors
// wrapping Config.Foreign, so a hostile file cannot run code.
//
// The machine is built for files of millions of small records (a PyTorch
// memory snapshot's trace entries) read by a consumer that keeps far less
// than the pickle's object tree:
//
//   - Records (records.go): a list whose first item is a dict with
//     Config.RecordKey hands each of its dicts to the Converter as it is
//     appended, and the dict is recycled.
//   - Converted references (memo.go): the Converter may turn a dict or a
//     list into a number of its own (a DictRef or ListRef) and let the
//     object go; the memo keeps the number in a 4-byte slot.
//   - The batch reader (fast.go): a batch of records of the usual shape is
//     read straight from the read buffer, with no pickle stack, dict
//     objects or opcode dispatch per value; each record goes to the
//     Converter as a Record of slots (Schema), and the batch is committed
//     in one call.
//
// Hostile input ends in an error, never a panic or unbounded memory: the
// strings and the stack are bounded (Config.MaxString, Config.MaxStack),
// and what the machine builds is charged to a Budget that grows with the
// bytes read (LimitError).
package pickle
