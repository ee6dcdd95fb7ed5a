export default function probe(pi) {}
