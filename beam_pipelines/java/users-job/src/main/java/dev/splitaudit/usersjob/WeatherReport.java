/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 */
package dev.splitaudit.usersjob;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.splitaudit.lineage.KafkaLineage;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.checkerframework.checker.nullness.qual.Nullable;

/**
 * What the job makes of one reading: the station and time as read, the temperature in Celsius and Fahrenheit,
 * the rainfall; and, only when the job runs with --lineage=true, the lineage kit's columns of the record.
 */
public final class WeatherReport implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String station;
  private final String timestamp;
  private final double temperatureC;
  private final double temperatureF;
  private final double rainfallMm;
  private final @Nullable KafkaLineage lineage;

  WeatherReport(WeatherReading reading, @Nullable KafkaLineage lineage) {
    this.station = reading.station;
    this.timestamp = reading.timestamp;
    this.temperatureC = reading.temperature;
    this.temperatureF = reading.temperature * 9.0 / 5.0 + 32.0;
    this.rainfallMm = reading.rainfall;
    this.lineage = lineage;
  }

  /** Parses one input record's JSON value. */
  static WeatherReport parse(String json, @Nullable KafkaLineage lineage) {
    try {
      return new WeatherReport(JSON.readValue(json, WeatherReading.class), lineage);
    } catch (IOException e) {
      throw new UncheckedIOException("not a weather record: " + json, e);
    }
  }

  /** The fields of the report (never the lineage), in output order. */
  private Map<String, Object> fields() {
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("station", station);
    fields.put("timestamp", timestamp);
    fields.put("temperature_c", temperatureC);
    fields.put("temperature_f", temperatureF);
    fields.put("rainfall_mm", rainfallMm);
    return fields;
  }

  /** The line written to the output topic: a JSON object of the report's fields. */
  String toJsonLine() {
    try {
      return JSON.writeValueAsString(fields());
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The Avro schema of the Parquet rows: the report's fields, then the lineage columns when asked for. */
  static Schema avroSchema(boolean withLineage) {
    SchemaBuilder.FieldAssembler<Schema> fields =
        SchemaBuilder.record("WeatherReport").namespace("dev.splitaudit.usersjob").fields()
            .requiredString("station")
            .requiredString("timestamp")
            .requiredDouble("temperature_c")
            .requiredDouble("temperature_f")
            .requiredDouble("rainfall_mm");
    if (withLineage) {
      fields = fields
          .requiredString("topic")
          .requiredInt("partition")
          .requiredLong("offset")
          .requiredInt("subtask")
          .requiredString("reader_id")
          .requiredInt("attempt")
          .requiredString("job_id");
    }
    return fields.endRecord();
  }

  /** The Parquet row of the report in {@code schema} (one of {@link #avroSchema}). */
  GenericRecord toRecord(Schema schema) {
    GenericRecord record = new GenericData.Record(schema);
    Map<String, Object> row = fields();
    if (lineage != null && schema.getField("topic") != null) {
      lineage.putColumns(row);
    }
    for (Map.Entry<String, Object> field : row.entrySet()) {
      record.put(field.getKey(), field.getValue());
    }
    return record;
  }
}
