func.func @broken( {
  return
}
