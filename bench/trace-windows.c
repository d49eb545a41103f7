// How a node's trace windows cost on a file system: twenty files of 350 KiB in 214-byte lines,
// written through a shared mapping in windows of 16 KiB doubling (as src/trace/mapped.rs does),
// each window made by fallocate (0), a sparse extension (1) or zeros written (2), the pages
// faulted in ahead with MADV_POPULATE_WRITE. docs/cost.md, "The trace's windows written with zeros".
//   cc -O2 -o /tmp/trace-windows bench/trace-windows.c
//   mkdir -p /tmp/tw && for m in 0 1 2; do /tmp/trace-windows $m /tmp/tw; done
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <time.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static char z[1<<20];
int main(int argc,char**argv){
  int method=atoi(argv[1]); const char*dir=argv[2]; int files=20; size_t total=350*1024;
  char line[214]; memset(line,'x',213); line[213]='\n';
  char p[256];
  for(int f=0;f<files;f++){ sprintf(p,"%s/f%d",dir,f); unlink(p);} sync();
  double t0=now();
  for(int f=0;f<files;f++){
    sprintf(p,"%s/f%d",dir,f);
    int fd=open(p,O_RDWR|O_CREAT|O_TRUNC,0644);
    size_t off=0, moff=0, win=16384; char*m=0; size_t touched=0;
    while(off+214<total){
      if(!m || off+214>moff+win){
        if(m){munmap(m,win); win*=2;}
        moff=off/4096*4096;
        if(method==0) fallocate(fd,0,moff,win);
        else if(method==1) ftruncate(fd,moff+win);
        else if(method==2) pwrite(fd,z,win,moff);
        m=mmap(0,win,PROT_READ|PROT_WRITE,MAP_SHARED,fd,moff); touched=moff;
      }
      memcpy(m+(off-moff),line,214); off+=214;
      if(off+8192>touched){ size_t to=((off+16384)/4096)*4096; if(to>moff+win) to=moff+win; if(to>touched) madvise(m+(touched-moff),to-touched,MADV_POPULATE_WRITE); touched=to;}
    }
    munmap(m,win); ftruncate(fd,off); close(fd);
  }
  printf("method %d %s: %.1f ms\n",method,dir,(now()-t0)/1000);
}
