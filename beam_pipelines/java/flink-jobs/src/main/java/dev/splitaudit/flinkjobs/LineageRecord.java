package dev.splitaudit.flinkjobs;

/** A Kafka record reduced to where it came from and what it held (hashes); a Flink POJO. */
public final class LineageRecord {
  public String topic;
  public int partition;
  public long offset;
  public String readerId;
  public String keyHash; // null for a null key
  public String valueHash; // null for a null value

  public LineageRecord() {}

  LineageRecord(
      String topic, int partition, long offset, String readerId, String keyHash, String valueHash) {
    this.topic = topic;
    this.partition = partition;
    this.offset = offset;
    this.readerId = readerId;
    this.keyHash = keyHash;
    this.valueHash = valueHash;
  }
}
