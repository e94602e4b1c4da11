"""The Kafka offset checks on the real broker's offsets: a committed group, records deleted below the restore point."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from splitaudit.audit.checks.findings import COMMITTED_OFFSET, ERROR, EXPIRED_UNREAD, INFO, LAG, WARNING
from splitaudit.audit.checks.offsets import check_offsets
from splitaudit.clients import kafka
from splitaudit_lab.stack.stack import Stack

pytestmark = pytest.mark.integration


def test_expired_unread_committed_drift_and_lag_from_real_offsets(stack: Stack) -> None:
    bootstrap = stack.kafka.bootstrap
    kafka.create_topic(bootstrap, "retained", partitions=2)
    kafka.produce(bootstrap, "retained", partitions=2, count=100)  # offsets 0..49 in each partition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit-g", "enable.auto.commit": False})
    try:
        consumer.commit(
            offsets=[TopicPartition("retained", 0, 30), TopicPartition("retained", 1, 50)], asynchronous=False
        )
    finally:
        consumer.close()
    client = kafka.admin(bootstrap)  # must outlive the future: a collected client cancels its requests
    for future in client.delete_records([TopicPartition("retained", 0, 40)]).values():  # log start of p0 → 40
        future.result(30)

    offsets = kafka.partition_offsets(bootstrap, "retained", "audit-g")
    # the job restores p0 from 35 (5 offsets below the new log start) and p1 from 50; its sink holds p0 up to 34
    # and p1 up to 47
    findings = check_offsets(
        offsets, {("retained", 0): 35, ("retained", 1): 50}, {("retained", 0): 35, ("retained", 1): 48}, "audit-g"
    )

    assert [(f.kind, f.severity, f.topic, f.partition, f.count, f.offset_ranges) for f in findings] == [
        (EXPIRED_UNREAD, ERROR, "retained", 0, 5, ((35, 39),)),
        (COMMITTED_OFFSET, WARNING, "retained", 0, 5, ((30, 34),)),
        (LAG, INFO, "retained", 0, 10, ((40, 49),)),
        (COMMITTED_OFFSET, WARNING, "retained", 1, 2, ((48, 49),)),
    ]
    assert findings[1].detail == (
        "group 'audit-g' committed 30, 5 behind the savepoint's next offset 35; "
        "5 behind the sink's processed next offset 35"
    )
