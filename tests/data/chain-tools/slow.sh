#!/bin/sh
sleep 5
echo '{}'
