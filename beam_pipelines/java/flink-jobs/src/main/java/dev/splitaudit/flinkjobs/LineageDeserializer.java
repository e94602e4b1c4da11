package dev.splitaudit.flinkjobs;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.UUID;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Turns each Kafka record into its {@link LineageRecord}. The KafkaSource opens one instance per source reader
 * (subtask), which draws the reader id, a UUID, in {@link #open}.
 */
final class LineageDeserializer implements KafkaRecordDeserializationSchema<LineageRecord> {
  private static final long serialVersionUID = 1L;
  private static final int PREFIX_BYTES = 8;
  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  private transient String readerId;

  @Override
  public void open(DeserializationSchema.InitializationContext context) {
    readerId = UUID.randomUUID().toString();
  }

  @Override
  public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<LineageRecord> out) {
    out.collect(
        new LineageRecord(
            record.topic(),
            record.partition(),
            record.offset(),
            readerId,
            sha256Prefix(record.key()),
            sha256Prefix(record.value())));
  }

  @Override
  public TypeInformation<LineageRecord> getProducedType() {
    return TypeInformation.of(LineageRecord.class);
  }

  /**
   * The sink's {@code key_hash}/{@code value_hash}: the first 8 bytes of SHA-256 as 16 hex digits
   * ({@code hashlib.sha256(data).hexdigest()[:16]}), null for null data, as the reference pipeline's.
   */
  static String sha256Prefix(byte[] data) {
    if (data == null) {
      return null;
    }
    byte[] digest;
    try {
      digest = MessageDigest.getInstance("SHA-256").digest(data);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM provides SHA-256", e);
    }
    byte[] hex = new byte[2 * PREFIX_BYTES];
    for (int i = 0; i < PREFIX_BYTES; i++) {
      hex[2 * i] = HEX[(digest[i] >> 4) & 0xf];
      hex[2 * i + 1] = HEX[digest[i] & 0xf];
    }
    return new String(hex, StandardCharsets.US_ASCII);
  }
}
