#!/usr/bin/env python3
"""Overhead per member of large collections of short strings (the data-types issue's <= 8 B target):
one hash of 1,000,000 f<i> -> v<i> pairs, 1,000 sets of 1,000 m:<i> members, and 10,000 hashes of
100 f<i> -> v<i> pairs (plus, for reference, one set of the integers 0..999,999: bytes per member), in densekv and in redis-server, each on a fresh server; bytes = VmRSS delta / members, overhead = that minus the
member bytes. Usage: cargo build --release -p server && python3 scripts/measure_big_collections.py
(DENSEKV_BIN overrides the binary; needs redis-server and the redis Python package)."""
import redis, subprocess, socket, time, sys
def port():
    s=socket.socket(); s.bind(('',0)); p=s.getsockname()[1]; s.close(); return p
def rss(pid):
    for l in open(f'/proc/{pid}/status'):
        if l.startswith('VmRSS'): return int(l.split()[1])*1024
def run(cmd, load, n, member_bytes):
    p=port(); proc=subprocess.Popen(cmd+['--port',str(p)],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
    time.sleep(0.5); r=redis.Redis(port=p); r.ping(); base=rss(proc.pid)
    load(r); time.sleep(3); d=rss(proc.pid)-base
    proc.terminate(); proc.wait()
    return d/n, d/n-member_bytes
def big_hash(r):
    pipe=r.pipeline(transaction=False)
    for i in range(1_000_000):
        pipe.hset('h', f'f{i}', f'v{i}')
        if i%10000==9999: pipe.execute()
    pipe.execute()
def many_sets(r):
    pipe=r.pipeline(transaction=False)
    for s in range(1000):
        for i in range(1000):
            pipe.sadd(f's{s}', f'm:{s*1000+i}')
        pipe.execute()
def many_hashes(r):
    pipe=r.pipeline(transaction=False)
    for h in range(10_000):
        for i in range(100):
            pipe.hset(f'h{h}', f'f{i}', f'v{i}')
        if h%100==99: pipe.execute()
    pipe.execute()
def int_set(r):
    pipe=r.pipeline(transaction=False)
    for i in range(1_000_000):
        pipe.sadd('ids', i)
        if i%10000==9999: pipe.execute()
    pipe.execute()
hb=sum(len(f'f{i}')+len(f'v{i}') for i in range(1_000_000))/1e6
sb=sum(len(f'm:{i}') for i in range(1_000_000))/1e6
mb=sum(len(f'f{i}')+len(f'v{i}') for i in range(100))/100
import os
DENSEKV=os.environ.get('DENSEKV_BIN','target/release/densekv')
for name,cmd in [('densekv',[DENSEKV,'--save','']),('redis',['redis-server','--save','','--appendonly','no'])]:
    print(name,'hash 1M f<i>->v<i>: B/pair %.1f overhead %.1f'%run(cmd,big_hash,1e6,hb))
    print(name,'1000 sets x 1000 m:<i>: B/member %.1f overhead %.1f'%run(cmd,many_sets,1e6,sb))
    print(name,'10000 hashes x 100 f<i>->v<i>: B/field %.1f overhead %.1f'%run(cmd,many_hashes,1e6,mb))
    print(name,'1 set of the integers 0..999999: B/member %.1f'%run(cmd,int_set,1e6,0)[0])
