// A function that uses an SSA value it never defines (line 4, column 10).

func.func @f() -> i32 {
  return %missing : i32
}
